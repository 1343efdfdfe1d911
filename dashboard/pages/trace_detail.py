"""`/traces/<trace_id>`: one trace, in tabs (Overview, Kernels, Roofline, Memory, Ranges, Query).

The URL is the state: `?tab=kernels&group=cpu_op&sort=count&order=asc&q=gemm&page=2`,
`?tab=roofline&color=bound&vs=<id>&ncu=<launch>`, `?tab=ranges&range=forward&domain=&side=gpu`,
`?tab=query&sql=SELECT...`. Tabs are links and every
control writes the URL (`callback-nav`), so the pages router renders the view again from its
query; any view can be bookmarked or pasted. While the trace is queued or processing, it polls.

Public surface: the Dash page (path template `/traces/<trace_id>`).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import dash
from dash import ALL, Input, Output, State, callback, dcc, html
from dash.development.base_component import Component
from dash_ag_grid import AgGrid

from dashboard.api.client import ApiError, current_client
from dashboard.api.ncu import get_ncu_sections
from dashboard.api.traces import Trace, get_trace
from dashboard.components import notice, trace_summary
from dashboard.components.grid import sorted_column
from dashboard.components.ncu_panel import launch_of
from dashboard.components.operators_panel import op_kernels
from dashboard.components.query_panel import empty_sql_hint
from dashboard.components.ranges_panel import parse_range_key
from dashboard.components.status_badge import PENDING, progress_bar
from dashboard.components.trace_views import TABS, tab_bar
from dashboard.pages import _trace_tabs as tabs

# Dash ships no annotations for register_page.
dash.register_page(  # type: ignore[no-untyped-call]
    __name__, path_template="/traces/<trace_id>", title="Trace · perfdash", name="Trace"
)

TRACE_DETAIL = "trace-detail"
TRACE_DETAIL_ID = "trace-detail-id"
TRACE_DETAIL_QUERY = "trace-detail-query"
TRACE_DETAIL_URL = "trace-detail-url"
TRACE_DETAIL_POLL = "trace-detail-poll"
TRACE_DETAIL_BODY = "trace-detail-body"
TRACE_DETAIL_STATUS = "trace-detail-status"
KERNELS = "trace-kernels"
ROOFLINE = "trace-roofline"
QUERY = "trace-query"
RANGES = "trace-ranges"
OPERATORS = "trace-operators"
POLL_MS = 1500


def _pending(trace: Trace) -> Component:
    text = f"This trace is {trace['status']}; the page updates by itself when parsing finishes."
    bar = progress_bar(trace.get("progress")) if trace["status"] == "processing" else None
    return notice([text, bar] if bar else text, "info", TRACE_DETAIL_STATUS)


def _body(trace_id: str, query: dict[str, str]) -> tuple[list[Component], bool]:
    """What to show now, and whether the trace has settled (so polling can stop)."""
    client = current_client()
    try:
        trace = get_trace(client, trace_id)
    except ApiError as e:
        if e.status == 404:
            return [notice(f"There is no trace with id {trace_id}.", "error")], True
        return [notice(f"Could not load the trace: {e.detail}", "error")], False
    header = html.Section(trace_summary(trace, TRACE_DETAIL), className="card")
    if trace["status"] in PENDING:
        return [header, _pending(trace)], False
    if trace["status"] == "failed":
        return [header], True
    tab = query.get("tab") or "overview"
    tab = tab if tab in dict(TABS) else "overview"
    view = dcc.Loading(tabs.render(tab, client, trace, query), type="circle", delay_show=150)
    hidden = tabs.hidden_tabs(client, trace)
    return [header, tab_bar(trace_id, tab, TRACE_DETAIL, hidden), view], True


def _tab_control_ids() -> list[Component]:
    """Hidden stand-ins for the tab controls the URL callbacks listen to. Dash calls this
    layout with no id to learn every ID the app's callbacks name; without these, every
    page logged "ID not found in layout" (the real ones exist only on their tab)."""
    hidden = {"display": "none"}
    return [
        html.Div(
            [
                AgGrid(id=f"{KERNELS}-table"),
                dcc.Dropdown(id=f"{KERNELS}-group"),
                dcc.Input(id=f"{KERNELS}-search"),
                dcc.RadioItems(id=f"{ROOFLINE}-color"),
                dcc.Dropdown(id=f"{ROOFLINE}-vs"),
                dcc.Graph(id=f"{ROOFLINE}-chart"),
                dcc.Textarea(id=f"{QUERY}-sql"),
                html.Button(id=f"{QUERY}-run"),
                html.Div(id=f"{QUERY}-hint"),
                html.Button(id=f"{QUERY}-csv"),
                AgGrid(id=f"{QUERY}-grid"),
                AgGrid(id=f"{RANGES}-grid"),
                AgGrid(id=f"{OPERATORS}-grid"),
                dcc.Dropdown(id=f"{OPERATORS}-group"),
                dcc.Input(id=f"{OPERATORS}-search"),
                html.Div(id=f"{OPERATORS}-kernels"),
            ],
            style=hidden,
        )
    ]


def layout(trace_id: str | None = None, **query: str) -> html.Div:
    """Fresh on every visit; Dash also calls it with no id to learn the page's IDs."""
    body, settled = (
        _body(trace_id, query)
        if trace_id
        else ([notice("No trace selected."), *_tab_control_ids()], True)
    )
    return html.Div(
        [
            dcc.Link("← All traces", href="/", className="back-link"),
            dcc.Location(id=TRACE_DETAIL_URL, refresh="callback-nav"),
            dcc.Store(id=TRACE_DETAIL_ID, data=trace_id),
            dcc.Store(id=TRACE_DETAIL_QUERY, data=query),
            dcc.Interval(id=TRACE_DETAIL_POLL, interval=POLL_MS, disabled=settled),
            html.Div(body, id=TRACE_DETAIL_BODY),
        ]
    )


@callback(
    Output(TRACE_DETAIL_BODY, "children"),
    Output(TRACE_DETAIL_POLL, "disabled"),
    Input(TRACE_DETAIL_POLL, "n_intervals"),
    State(TRACE_DETAIL_ID, "data"),
    State(TRACE_DETAIL_QUERY, "data"),
    prevent_initial_call=True,
)
def poll(
    _n: int | None, trace_id: str | None, query: dict[str, str] | None
) -> tuple[list[Component], bool]:
    """Re-read a pending trace; stop polling once it is ready or failed."""
    if not trace_id:
        raise dash.exceptions.PreventUpdate
    return _body(trace_id, query or {})


def _href(trace_id: str, query: dict[str, Any]) -> str:
    kept = {k: str(v) for k, v in query.items() if v not in (None, "", 0, "0")}
    return f"/traces/{trace_id}?{urlencode(kept)}"


@callback(
    Output(TRACE_DETAIL_URL, "href", allow_duplicate=True),
    Input({"type": f"{KERNELS}-page", "role": ALL, "page": ALL}, "n_clicks"),
    Input(f"{KERNELS}-table", "columnState"),
    Input(f"{KERNELS}-group", "value"),
    Input(f"{KERNELS}-search", "value"),
    State(TRACE_DETAIL_ID, "data"),
    State(TRACE_DETAIL_QUERY, "data"),
    prevent_initial_call=True,
)
def kernels_query(
    _clicks: list[int | None],
    column_state: list[dict[str, Any]] | None,
    group: str | None,
    q: str | None,
    trace_id: str,
    query: dict[str, str],
) -> str:
    """Put the page asked for, the sort, grouping and search in the URL; the view follows it."""
    button = dash.ctx.triggered_id
    clicked = isinstance(button, dict) and bool(dash.ctx.triggered[0]["value"])
    page = int(button["page"]) if clicked else tabs.kernel_query(query).page
    new = tabs.kernel_url_query(query, page, sorted_column(column_state), group, q)
    if new == {k: v for k, v in query.items() if v}:
        raise dash.exceptions.PreventUpdate
    return _href(trace_id, new)


@callback(
    Output(TRACE_DETAIL_URL, "href", allow_duplicate=True),
    Input(f"{ROOFLINE}-color", "value"),
    Input(f"{ROOFLINE}-vs", "value"),
    State(TRACE_DETAIL_ID, "data"),
    State(TRACE_DETAIL_QUERY, "data"),
    prevent_initial_call=True,
)
def roofline_query(color: str | None, vs: str | None, trace_id: str, query: dict[str, str]) -> str:
    """Put the colouring and the overlaid trace in the URL."""
    new = {**query, "tab": "roofline", "color": color or "", "vs": vs or ""}
    if {k: v for k, v in new.items() if v} == {k: v for k, v in query.items() if v}:
        raise dash.exceptions.PreventUpdate
    return _href(trace_id, new)


@callback(
    Output(TRACE_DETAIL_URL, "href", allow_duplicate=True),
    Input(f"{ROOFLINE}-chart", "clickData"),
    State(TRACE_DETAIL_ID, "data"),
    State(TRACE_DETAIL_QUERY, "data"),
    prevent_initial_call=True,
)
def roofline_point(click: dict[str, Any] | None, trace_id: str, query: dict[str, str]) -> str:
    """A clicked point of an ncu trace shows its kernel's Nsight Compute sections."""
    name = ((click or {}).get("points") or [{}])[0].get("customdata")
    if not isinstance(name, str):
        raise dash.exceptions.PreventUpdate
    try:
        launch = launch_of(get_ncu_sections(current_client(), trace_id, limit=1000), name)
    except ApiError as e:  # not an ncu trace: nothing to show
        raise dash.exceptions.PreventUpdate from e
    if launch is None or query.get("ncu") == str(launch):
        raise dash.exceptions.PreventUpdate
    return _href(trace_id, {**query, "tab": "roofline", "ncu": str(launch)})


@callback(
    Output(TRACE_DETAIL_URL, "href", allow_duplicate=True),
    Output(f"{QUERY}-hint", "children"),
    Input(f"{QUERY}-run", "n_clicks"),
    State(f"{QUERY}-sql", "value"),
    State(TRACE_DETAIL_ID, "data"),
    State(TRACE_DETAIL_QUERY, "data"),
    prevent_initial_call=True,
)
def run_query(
    clicks: int | None, sql: str | None, trace_id: str, query: dict[str, str]
) -> tuple[Any, Component | None]:
    """Put the SQL in the URL; the tab runs it from there, so the link reproduces it.
    An empty editor says what to do instead."""
    sql = (sql or "").strip()
    if not clicks:
        raise dash.exceptions.PreventUpdate
    if not sql:
        return dash.no_update, empty_sql_hint(trace_id)
    if query.get("tab") == "query" and query.get("sql") == sql:
        raise dash.exceptions.PreventUpdate  # a trace's data never changes: same answer
    return _href(trace_id, {"tab": "query", "sql": sql, "limit": query.get("limit")}), None


@callback(
    Output(TRACE_DETAIL_URL, "href", allow_duplicate=True),
    Input(f"{RANGES}-grid", "cellClicked"),
    State(TRACE_DETAIL_ID, "data"),
    State(TRACE_DETAIL_QUERY, "data"),
    prevent_initial_call=True,
)
def ranges_query(cell: dict[str, Any] | None, trace_id: str, query: dict[str, str]) -> str:
    """Put the clicked range in the URL; the tab charts the durations of the one there."""
    selected = parse_range_key((cell or {}).get("rowId"))
    if selected is None:
        raise dash.exceptions.PreventUpdate
    name, domain, side = selected
    new = {"tab": "ranges", "range": name, "domain": domain or "", "side": side}
    new["side"] = "" if side == "cpu" else side
    if {k: v for k, v in new.items() if v} == {k: v for k, v in query.items() if v}:
        raise dash.exceptions.PreventUpdate
    return _href(trace_id, new)


@callback(
    Output(f"{QUERY}-grid", "exportDataAsCsv"),
    Input(f"{QUERY}-csv", "n_clicks"),
    prevent_initial_call=True,
)
def download_query_csv(clicks: int | None) -> bool:
    """Every row of the result as CSV, written by the grid in the browser."""
    return bool(clicks)


@callback(
    Output(TRACE_DETAIL_URL, "href", allow_duplicate=True),
    Input(f"{OPERATORS}-group", "value"),
    Input(f"{OPERATORS}-search", "value"),
    State(TRACE_DETAIL_ID, "data"),
    State(TRACE_DETAIL_QUERY, "data"),
    prevent_initial_call=True,
)
def operators_query(group: str | None, q: str | None, trace_id: str, query: dict[str, str]) -> str:
    """Grouping and search of the Operators tab go in the URL (the API does both)."""
    new = tabs.operators_url_query(group, q)
    if new == {k: v for k, v in query.items() if v}:
        raise dash.exceptions.PreventUpdate
    return _href(trace_id, new)


@callback(
    Output(f"{OPERATORS}-kernels", "children"),
    Input(f"{OPERATORS}-grid", "selectedRows"),
    prevent_initial_call=True,
)
def operator_kernels(selected: list[dict[str, Any]] | None) -> Component:
    """The kernels of the op selected in the table."""
    if not selected:
        raise dash.exceptions.PreventUpdate
    return op_kernels(selected[0], OPERATORS)
