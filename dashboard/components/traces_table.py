"""The traces list as an HTML table, one row per trace, newest first."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dash import dcc, html

from dashboard.api.traces import Trace
from dashboard.components.status_badge import progress_bar, status_badge
from dashboard.components.trace_summary import trace_duration
from dashboard.format import format_bytes, format_count, format_timestamp

COLUMNS = ("Name", "Status", "Format", "Size", "Events", "Duration", "Created", "")


def _status_cell(trace: Trace) -> html.Td:
    children: list[html.Span | html.Div] = [status_badge(trace["status"])]
    if trace["status"] == "processing" and (bar := progress_bar(trace.get("progress"))):
        children.append(bar)
    if trace["status"] == "failed" and trace["error"]:
        children.append(html.Div(trace["error"], className="row-error"))
    return html.Td(children)


def _events_cell(trace: Trace) -> html.Td:
    counts = trace["event_counts"]
    if not counts:
        return html.Td("—", className="num")
    breakdown = ", ".join(f"{kind} {n:,}" for kind, n in sorted(counts.items()))
    return html.Td(format_count(sum(counts.values())), className="num", title=breakdown)


def _data_attrs(trace: Trace) -> dict[str, Any]:
    """`data-*` hooks for tests and scripts, which should not depend on column order."""
    return {"data-trace-id": trace["id"], "data-status": trace["status"]}


def _row(trace: Trace) -> html.Tr:
    href = f"/traces/{trace['id']}"
    return html.Tr(
        [
            html.Td(
                [
                    dcc.Link(trace["name"], href=href, className="trace-name"),
                    html.Div(trace["project"], className="muted small"),
                ],
                className="name-cell",
            ),
            _status_cell(trace),
            html.Td(trace["format"] or "—"),
            html.Td(format_bytes(trace["size_bytes"]), className="num"),
            _events_cell(trace),
            html.Td(trace_duration(trace), className="num"),
            html.Td(format_timestamp(trace["created_at"]), className="nowrap muted"),
            html.Td(dcc.Link("Open →", href=href, className="open-link")),
        ],
        className=f"row-{trace['status']}",
        **_data_attrs(trace),
    )


def traces_table(traces: Sequence[Trace], total: int | None = None) -> html.Div:
    """The table, or a friendly empty state; `total` notes how many more the API holds."""
    if not traces:
        return html.Div("No traces yet. Upload one above.", className="empty-state")
    table = html.Table(
        [
            html.Thead(html.Tr([html.Th(c) for c in COLUMNS])),
            html.Tbody([_row(t) for t in traces]),
        ],
        className="data-table",
    )
    footer = []
    if total is not None and total > len(traces):
        footer = [html.Div(f"Showing the newest {len(traces)} of {total:,}.", className="muted")]
    return html.Div([table, *footer], className="table-wrap")
