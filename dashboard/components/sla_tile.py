"""One SLA as a tile for the board: colour by status (a failing one by its severity: critical
red, warning amber, info blue), last value against its bound, the baseline it was judged
against and, for a regression, the first bad commit, and a sparkline.

The board is one static HTML document shown in an iframe, and each sparkline one SVG
image: a wall screen shows hundreds of tiles, and as Dash components (about ten per tile)
200 tiles took 14-19 s to appear in Chromium on this 2-core machine; as one document they
appear as soon as the callback answers. Every value from the API is escaped.

Public surface: `board_document`, `sla_tile`, `bound_text`, `ago`, `fmt_value`,
`sparkline_svg`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from html import escape
from typing import Any
from urllib.parse import quote, urlencode

from dashboard.format import format_value

_STATUS_CLASS = {"pass": "sla-pass", "fail": "sla-fail", "insufficient_data": "sla-insufficient"}
_OPS = {"<=": "≤", "<": "<", ">=": "≥", ">": ">"}
COMMIT_CHARS = 10


def ago(stamp: str | None, now: datetime | None = None) -> str:
    """A short age for a timestamp from the API.

    >>> ago("2026-01-01T00:00:00+00:00", datetime(2026, 1, 1, 3, tzinfo=UTC))
    '3 h ago'
    >>> ago(None)
    'never'
    """
    if not stamp:
        return "never"
    then = datetime.fromisoformat(stamp)
    then = then if then.tzinfo else then.replace(tzinfo=UTC)
    seconds = ((now or datetime.now(UTC)) - then).total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{int(seconds // size)} {unit} ago"
    return "just now"


def sparkline_svg(values: list[float], width: int = 200, height: int = 28) -> str:
    """A polyline as an SVG data URI: one <img> per tile keeps hundreds of tiles cheap.

    >>> sparkline_svg([1.0, 2.0])[:26]
    'data:image/svg+xml;utf8,%3'
    """
    lo, hi = min(values), max(values)
    span = (hi - lo) or 1.0
    step = width / max(len(values) - 1, 1)
    pts = " ".join(
        f"{i * step:.1f},{height - 2 - (v - lo) / span * (height - 4):.1f}"
        for i, v in enumerate(values)
    )
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" preserveAspectRatio="none"><polyline points="{pts}" '
        'fill="none" stroke="white" stroke-width="2" stroke-linejoin="round"/></svg>'
    )
    return "data:image/svg+xml;utf8," + quote(svg)


def fmt_value(v: float | None, unit: str = "") -> str:
    """A metric value for a tile, formatted as everywhere else (`dashboard.format`).

    >>> fmt_value(35714.2), fmt_value(11.94), fmt_value(None), fmt_value(4.143e9)
    ('35,714', '11.94', '—', '4,143,000,000')
    """
    return format_value(v, unit)


def _sparkline(values: list[float]) -> str:
    if not values:
        return '<div class="sla-spark sla-spark-empty">no history</div>'
    title = escape(
        f"last {len(values)} values, {fmt_value(min(values))} .. {fmt_value(max(values))}"
    )
    return f'<img class="sla-spark" src="{sparkline_svg(values)}" title="{title}" alt="{title}">'


def _skipped(sla: dict[str, Any]) -> str:
    """Why the latest run was not judged: its flags (skipped), or the data the rule lacks."""
    reason = sla.get("last_skip_reason")
    if not reason:
        return ""
    if sla.get("status") == "insufficient_data":
        title = escape(f"latest run not judged: {reason}")
        return f'<div class="sla-skip" title="{title}">⚠ {escape(reason)}</div>'
    title = escape(f"latest run not judged (require_stable): {reason}")
    return f'<div class="sla-skip" title="{title}">⚠ skipped: {escape(reason)}</div>'


def bound_text(sla: dict[str, Any]) -> str:
    """What the last value was held to: `≤ 12` or `≥ 4.1` (a relative rule's bound is an
    upper one when its threshold sits above the baseline, as for lower-is-better metrics;
    `no_increase` is always one), or nothing for rules without a threshold.

    >>> bound_text({"rule": "absolute", "op": "<=", "last_threshold": 12.0})
    '≤ 12'
    >>> bound_text({"rule": "relative", "last_threshold": 97.0, "last_baseline": 100.0})
    '≥ 97'
    >>> bound_text({"rule": "regression", "last_threshold": None, "last_baseline": 11.2})
    ''
    """
    threshold = sla.get("last_threshold")
    if threshold is None:
        return ""
    if sla["rule"] == "absolute":
        op = _OPS.get(sla["op"], sla["op"])
    else:
        baseline = sla.get("last_baseline")
        upper = sla["rule"] == "no_increase" or baseline is None or threshold >= baseline
        op = "≤" if upper else "≥"
    return f"{op} {fmt_value(threshold)}"


def _evidence(sla: dict[str, Any]) -> str:
    """The baseline, and the first bad commit while the SLA fails, as the CLI prints them."""
    parts = []
    if sla.get("last_baseline") is not None:
        parts.append(f"baseline {escape(fmt_value(sla['last_baseline']))}")
    commit = sla.get("first_bad_commit")
    if commit:
        short = escape(str(commit)[:COMMIT_CHARS])
        parts.append(f'first bad <span class="sla-commit" title="{escape(str(commit))}">'
                     f"{short}</span>")  # fmt: skip
    return f'<div class="sla-evidence">{" · ".join(parts)}</div>' if parts else ""


def sla_tile(sla: dict[str, Any]) -> str:
    """A tile linking to the SLA's series page, as HTML with every value escaped."""
    status = sla.get("status") or "no_data"
    query = {"project": sla["project"], "benchmark": sla["benchmark"], "metric": sla["metric"]}
    if sla["branch"]:
        query["branch"] = sla["branch"]
    e = {k: escape(str(v)) for k, v in sla.items()}
    threshold = escape(bound_text(sla))
    css = _STATUS_CLASS.get(status, "sla-none")
    if status == "fail":
        css += f" sla-fail-{escape(str(sla['severity']))}"
    href = "/series?" + escape(urlencode(query))
    return "".join(
        [
            f'<a class="sla-tile {css}" data-status="{status}" href="{href}">',
            f'<div class="sla-head"><span class="sla-name">{e["name"]}</span>',
            f'<span class="sla-status">{_status_text(status, sla["severity"])}</span></div>',
            f'<div class="sla-metric">{e["statistic"]}({e["metric"]})</div>',
            f'<div><span class="sla-value">{fmt_value(sla.get("last_observed"))}</span>',
            f'<span class="sla-threshold"> {threshold}</span></div>' if threshold else "</div>",
            _evidence(sla),
            _sparkline(sla.get("sparkline") or []),
            _skipped(sla),
            f'<div class="sla-foot">{e["severity"]} · changed {ago(sla.get("status_changed_at"))}',
            " · stable runs only" if sla.get("require_stable") else "",
            "</div></a>",
        ]
    )


def _status_text(status: str, severity: str) -> str:
    """PASS, NO DATA, or a failure with its severity: FAIL · CRITICAL."""
    text = status.replace("_", " ").upper()
    return f"{text} · {escape(severity.upper())}" if status == "fail" else text


def board_document(
    groups: list[tuple[str, list[tuple[str, list[dict[str, Any]]]]]], css: str
) -> str:
    """The whole board as one HTML document (projects, then benchmarks, then tiles)."""
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><base target='_top'>"
        f"<style>{css}</style></head><body class='slas-frame-body'>"
    ]
    for project, benchmarks in groups:
        parts.append(f'<section class="slas-project"><h2>{escape(project)}</h2>')
        for benchmark, tiles in benchmarks:
            parts.append(
                f'<h3 class="slas-benchmark">{escape(benchmark)}</h3><div class="slas-grid">'
            )
            parts.extend(sla_tile(t) for t in tiles)
            parts.append("</div>")
        parts.append("</section>")
    return "".join([*parts, "</body></html>"])
