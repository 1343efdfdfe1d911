"""`/traces/<trace_id>`: one trace's facts and where its GPU time went.

While the trace is queued or processing, the page polls the API and re-renders once
parsing is done; a failed trace shows its error instead of charts.
"""

from __future__ import annotations

import dash
from dash import Input, Output, State, callback, dcc, html
from dash.development.base_component import Component

from dashboard.api_client import ApiClient, ApiError, Trace, current_client
from dashboard.components import kernel_table, notice, trace_summary
from dashboard.components.status_badge import PENDING
from dashboard.figures import kernel_top_figure
from dashboard.format import format_count, format_duration_ns

# Dash ships no annotations for register_page.
dash.register_page(  # type: ignore[no-untyped-call]
    __name__, path_template="/traces/<trace_id>", title="Trace · perfdash", name="Trace"
)

TRACE_DETAIL = "trace-detail"
TRACE_DETAIL_ID = "trace-detail-id"
TRACE_DETAIL_POLL = "trace-detail-poll"
TRACE_DETAIL_BODY = "trace-detail-body"
TRACE_DETAIL_STATUS = "trace-detail-status"
TRACE_DETAIL_KERNELS_CHART = "trace-detail-kernels-chart"
TRACE_DETAIL_KERNELS_TABLE = "trace-detail-kernels-table"
POLL_MS = 1500
TOP_N = 10


def _kernels_section(client: ApiClient, trace_id: str) -> Component:
    try:
        stats = client.get_kernels(trace_id, limit=TOP_N)
    except ApiError as e:
        return notice(f"Could not load kernel stats: {e.detail}", "error")
    shown = min(TOP_N, stats["count"])
    subtitle = (
        f"{format_count(stats['count'])} distinct kernels, "
        f"{format_duration_ns(stats['total_kernel_ns'])} of kernel time; top {shown} shown."
    )
    return html.Section(
        [
            html.H2("Top kernels by total GPU time"),
            html.Div(subtitle, className="muted"),
            dcc.Graph(
                id=TRACE_DETAIL_KERNELS_CHART,
                figure=kernel_top_figure(stats["items"], top_n=TOP_N),
                config={"displaylogo": False, "responsive": True},
            ),
            kernel_table(stats["items"], table_id=TRACE_DETAIL_KERNELS_TABLE),
        ],
        className="card",
    )


def _pending(trace: Trace) -> Component:
    text = f"This trace is {trace['status']}; the page updates by itself when parsing finishes."
    return notice(text, "info", TRACE_DETAIL_STATUS)


def _body(trace_id: str) -> tuple[list[Component], bool]:
    """What to show now, and whether the trace has settled (so polling can stop)."""
    client = current_client()
    try:
        trace = client.get_trace(trace_id)
    except ApiError as e:
        if e.status == 404:
            return [notice(f"There is no trace with id {trace_id}.", "error")], True
        return [notice(f"Could not load the trace: {e.detail}", "error")], False
    summary = html.Section(trace_summary(trace, TRACE_DETAIL), className="card")
    if trace["status"] in PENDING:
        return [summary, _pending(trace)], False
    if trace["status"] == "failed":
        return [summary], True
    return [summary, _kernels_section(client, trace_id)], True


def layout(trace_id: str | None = None, **_query: str) -> html.Div:
    """Fresh on every visit; Dash also calls it with no id to learn the page's IDs."""
    body, settled = _body(trace_id) if trace_id else ([notice("No trace selected.")], True)
    return html.Div(
        [
            dcc.Link("← All traces", href="/", className="back-link"),
            dcc.Store(id=TRACE_DETAIL_ID, data=trace_id),
            dcc.Interval(id=TRACE_DETAIL_POLL, interval=POLL_MS, disabled=settled),
            html.Div(body, id=TRACE_DETAIL_BODY),
        ]
    )


@callback(
    Output(TRACE_DETAIL_BODY, "children"),
    Output(TRACE_DETAIL_POLL, "disabled"),
    Input(TRACE_DETAIL_POLL, "n_intervals"),
    State(TRACE_DETAIL_ID, "data"),
    prevent_initial_call=True,
)
def poll(_n: int | None, trace_id: str | None) -> tuple[list[Component], bool]:
    """Re-read a pending trace; stop polling once it is ready or failed."""
    if not trace_id:
        raise dash.exceptions.PreventUpdate
    return _body(trace_id)
