"""One SLA as a tile for the board: colour by status, last value vs threshold, a sparkline.

The sparkline is one SVG image, not a Plotly graph or a row of divs: a wall screen shows
hundreds of tiles, and each Dash component costs render time in the browser.

Public surface: `sla_tile`, `ago`, `fmt_value`, `sparkline_svg`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, urlencode

from dash import dcc, html

_STATUS_CLASS = {"pass": "sla-pass", "fail": "sla-fail"}


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


def _sparkline(values: list[float]) -> html.Img | html.Div:
    if not values:
        return html.Div("no history", className="sla-spark sla-spark-empty")
    title = f"last {len(values)} values, {min(values):.4g} .. {max(values):.4g}"
    return html.Img(src=sparkline_svg(values), className="sla-spark", title=title, alt=title)


def fmt_value(v: float | None) -> str:
    """A metric value short enough for a tile, without exponents for everyday sizes.

    >>> fmt_value(35714.2), fmt_value(11.94), fmt_value(None), fmt_value(3.2e9)
    ('35,714', '11.94', '-', '3.2e+09')
    """
    if v is None:
        return "-"
    if 1e4 <= abs(v) < 1e9:
        return f"{v:,.0f}"
    return f"{v:.4g}"


def sla_tile(sla: dict[str, Any]) -> dcc.Link:
    """A tile linking to the SLA's series page."""
    status = sla.get("status") or "no_data"
    op = (
        sla["op"]
        if sla["rule"] == "absolute"
        else {"relative": "≈", "no_increase": "≤"}.get(sla["rule"], "vs")
    )
    query = urlencode(
        {
            "project": sla["project"],
            "benchmark": sla["benchmark"],
            "metric": sla["metric"],
            **({"branch": sla["branch"]} if sla["branch"] else {}),
        }
    )
    body = [
        html.Div(
            [
                html.Span(sla["name"], className="sla-name"),
                html.Span(status.replace("_", " ").upper(), className="sla-status"),
            ],
            className="sla-head",
        ),
        html.Div(f"{sla['statistic']}({sla['metric']})", className="sla-metric"),
        html.Div(
            [
                html.Span(fmt_value(sla.get("last_observed")), className="sla-value"),
                html.Span(
                    f" {op} {fmt_value(sla.get('last_threshold'))}", className="sla-threshold"
                ),
            ]
        ),
        _sparkline(sla.get("sparkline") or []),
        html.Div(
            f"{sla['severity']} · changed {ago(sla.get('status_changed_at'))}", className="sla-foot"
        ),
    ]
    return dcc.Link(
        body,
        href=f"/series?{query}",
        className=f"sla-tile {_STATUS_CLASS.get(status, 'sla-none')}",
    )
