"""Tables of the benchmark pages: metrics of a sweep point, key/value facts, runs.

Pure builders (API dicts in, Dash components out); import them from this module, so the
shared `dashboard.components` package needs no edit.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from dash import dcc, html

from dashboard.api.benchmarks import BenchRun, Metric
from dashboard.components.status_badge import status_badge
from dashboard.format import format_timestamp, format_value

_DIRECTION = {"lower_is_better": "↓ lower is better", "higher_is_better": "↑ higher is better"}


def data_attr(name: str, value: str) -> dict[str, Any]:
    """A `data-*` hook for tests and scripts, independent of column order."""
    return {f"data-{name}": value}


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def metrics_table(metrics: Sequence[Metric]) -> html.Div:
    """One row per metric: p50, p95 and max for sampled ones, the value otherwise."""
    head = html.Thead(html.Tr([html.Th(h) for h in ("Metric", "p50 / value", "p95", "max", "n")]))
    rows = []
    for m in metrics:
        unit, samples = m.get("unit", ""), m.get("samples") or []
        if samples:
            cells = [_percentile(samples, 0.5), _percentile(samples, 0.95), max(samples)]
            shown = [format_value(v, unit) for v in cells] + [str(len(samples))]
        else:
            shown = [format_value(m.get("value"), unit), "", "", "1"]
        title = _DIRECTION.get(m.get("direction", ""), "")
        rows.append(
            html.Tr(
                [html.Td(m["metric"], className="mono", title=title)]
                + [html.Td(v, className="num") for v in shown],
                **data_attr("metric", m["metric"]),
            )
        )
    table = html.Table([head, html.Tbody(rows)], className="data-table metrics-table")
    return html.Div(table, className="table-wrap")


def kv_table(pairs: Sequence[tuple[str, Any]]) -> html.Table:
    """Facts as a two-column table; empty values show as a dash."""
    rows = [
        html.Tr([html.Td(k), html.Td("—" if v in (None, "", []) else str(v))]) for k, v in pairs
    ]
    return html.Table(html.Tbody(rows), className="data-table kv-table")


def _started(run: BenchRun) -> html.Td:
    """When the run started; one that never did says so (its queue time is on hover)."""
    if run["started_at"]:
        return html.Td(format_timestamp(run["started_at"]), className="muted small")
    queued = f"queued {format_timestamp(run['created_at'])}"
    return html.Td("not started", className="muted small bench-not-started", title=queued)


def runs_table(runs: Sequence[BenchRun], metric: str | None) -> html.Div:
    """A spec's runs: status, ref, when, determinism hash and the headline metric."""
    head = ("Run", "Status", "Ref", "Started", "Determinism hash", metric or "")
    rows = []
    for run in runs:
        values = [
            m.get("value")
            for p in run["results"]
            for m in p["metrics"]
            if m["metric"] == metric and m.get("value") is not None
        ]
        best = format_value(max(values), "") if values else "—"  # type: ignore[type-var]
        rows.append(
            html.Tr(
                [
                    html.Td(dcc.Link(run["id"][:8], href=f"/benchmark-runs/{run['id']}",
                                     className="mono")),
                    html.Td([status_badge(run["status"]),
                             html.Div(run["reason"] or "", className="row-error")]),
                    html.Td(run["ref"] or "—", className="mono small"),
                    _started(run),
                    html.Td((run["determinism_hash"] or "—")[:16], className="hash"),
                    html.Td(best, className="num"),
                ],
                **data_attr("run", run["id"]),
            )
        )  # fmt: skip
    table = html.Table(
        [html.Thead(html.Tr([html.Th(h) for h in head])), html.Tbody(rows)],
        className="data-table bench-runs",
    )
    return html.Div(table, className="table-wrap")


def waited(created_at: str, now: datetime) -> str:
    """How long a run has been queued, to the second under an hour.

    >>> waited("2026-12-02T10:00:00Z", datetime(2026, 12, 2, 10, 4, 12, tzinfo=UTC))
    '4 min 12 s'
    >>> waited("2026-12-02T07:30:00", datetime(2026, 12, 2, 10, 0, tzinfo=UTC))
    '2 h 30 min'
    """
    since = datetime.fromisoformat(created_at.replace("Z", "+00:00"))
    since = since if since.tzinfo else since.replace(tzinfo=UTC)  # SQLite drops the zone
    seconds = max(0, int((now - since).total_seconds()))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


def queued_table(runs: Sequence[BenchRun], now: datetime) -> html.Div:
    """Runs waiting for a runner: how long each has waited, and why it may wait forever."""
    head = ("Run", "Benchmark", "Queue", "Queued for", "")
    rows = [
        html.Tr(
            [
                html.Td(dcc.Link(run["id"][:8], href=f"/benchmark-runs/{run['id']}",
                                 className="mono")),
                html.Td(run["spec_name"]),
                html.Td(run.get("queue", ""), className="mono"),
                html.Td(waited(run["created_at"], now), className="num bench-waited"),
                html.Td([html.Div(w, className="row-error", style={"whiteSpace": "nowrap"})
                         for w in run["warnings"]]),
            ],
            **data_attr("queued", run["id"]),
        )
        for run in runs
    ]  # fmt: skip
    table = html.Table(
        [html.Thead(html.Tr([html.Th(h) for h in head])), html.Tbody(rows)],
        className="data-table bench-queued",
    )
    return html.Div(table, className="table-wrap")
