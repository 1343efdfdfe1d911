"""`/traces/<trace_id>/timeline`: the zoomable timeline of one trace.

Every zoom, pan, step jump, gap or search click sets one window store; one callback
fetches that window from the API (which answers at the right level of detail) and
redraws. The window also goes into the URL (`?start_ns=&end_ns=`) with
`history.replaceState`, so a link reopens the same view without a page reload.
"""

from __future__ import annotations

from typing import Any

import dash
from dash import ALL, Input, Output, State, callback, clientside_callback, ctx, dcc, html
from dash.development.base_component import Component

from dashboard.api_client import ApiClient, ApiError, current_client
from dashboard.clients import timeline as api
from dashboard.components import notice
from dashboard.components.timeline_panels import (
    GAP_BUTTON,
    MATCH_BUTTON,
    around,
    detail_panel,
    gaps_panel,
    search_panel,
    step_options,
    window_from_relayout,
)
from dashboard.figures.timeline import overview_figure, timeline_figure
from dashboard.format import format_count, format_duration_ns

dash.register_page(  # type: ignore[no-untyped-call]
    __name__,
    path_template="/traces/<trace_id>/timeline",
    title="Timeline · perfdash",
    name="Timeline",
)

TIMELINE_ID = "timeline-trace-id"
TIMELINE_WINDOW = "timeline-window"
TIMELINE_RANGE = "timeline-range"
TIMELINE_OVERVIEW_DATA = "timeline-overview-data"
TIMELINE_STEPS = "timeline-steps"
TIMELINE_GAP_DATA = "timeline-gap-data"
TIMELINE_MATCH_DATA = "timeline-match-data"
TIMELINE_GRAPH = "timeline-graph"
TIMELINE_OVERVIEW = "timeline-overview"
TIMELINE_STEP = "timeline-step"
TIMELINE_SEARCH = "timeline-search"
TIMELINE_SEARCH_RESULTS = "timeline-search-results"
TIMELINE_RESET = "timeline-reset"
TIMELINE_DETAIL = "timeline-detail"
TIMELINE_STATUS = "timeline-status"
TIMELINE_URL = "timeline-url"
MAX_ITEMS = 3000
GRAPH_CONFIG: Any = {"displaylogo": False, "scrollZoom": True, "responsive": True}


def _status(window: api.TimelineWindow) -> str:
    shown = f"{format_count(len(window['items']))} items"
    span = format_duration_ns(window["end_ns"] - window["start_ns"])
    if window["mode"] == "events":
        return f"{span} window · {shown}: individual events"
    gap = format_duration_ns(window["merge_gap_ns"])
    return (
        f"{span} window · {shown}: busy blocks (gaps under {gap} merged) covering "
        f"~{format_count(window['estimated_events'])} events · zoom in for single events"
    )


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value else None
    except ValueError:
        return None


def _controls(trace_id: str, steps: list[api.Step]) -> html.Div:
    return html.Div(
        [
            dcc.Dropdown(id=TIMELINE_STEP, options=step_options(steps), placeholder="Jump to step…",
                         clearable=True, className="timeline-step"),
            dcc.Input(id=TIMELINE_SEARCH, type="search", placeholder="Search names…",
                      debounce=True, className="timeline-search"),
            html.Button("Reset zoom", id=TIMELINE_RESET, className="button"),
            html.A("Download Chrome trace JSON", href=api.export_path(trace_id),
                   download=f"{trace_id}.trace.json", className="button button-secondary"),
        ],
        className="timeline-controls",
    )  # fmt: skip


def _view(client: ApiClient, trace_id: str, start: int | None, end: int | None) -> list[Component]:
    window = api.get_window(client, trace_id, start, end, MAX_ITEMS)
    overview = api.get_overview(client, trace_id)
    steps, gaps = api.get_steps(client, trace_id), api.get_gaps(client, trace_id)
    span = (window["start_ns"], window["end_ns"])
    full = {"start_ns": window["trace_start_ns"], "end_ns": window["trace_end_ns"]}
    return [
        dcc.Store(id=TIMELINE_WINDOW, data={"start_ns": span[0], "end_ns": span[1]}),
        dcc.Store(id=TIMELINE_RANGE, data=full),
        dcc.Store(id=TIMELINE_OVERVIEW_DATA, data=dict(overview)),
        dcc.Store(id=TIMELINE_STEPS, data=steps),
        dcc.Store(id=TIMELINE_GAP_DATA, data=gaps["items"]),
        dcc.Store(id=TIMELINE_MATCH_DATA, data=[]),
        _controls(trace_id, steps),
        html.Div(id=TIMELINE_SEARCH_RESULTS, className="timeline-search-results"),
        dcc.Graph(
            id=TIMELINE_OVERVIEW, figure=overview_figure(overview, span), config=GRAPH_CONFIG
        ),
        html.Div(_status(window), id=TIMELINE_STATUS, className="muted small"),
        dcc.Graph(id=TIMELINE_GRAPH, figure=timeline_figure(window), config=GRAPH_CONFIG),
        html.Div(
            [
                html.Section([html.H2("Selected event"), html.Div(
                    "Click an event to see its CPU launch and kernel stats; click a merged "
                    "block to zoom into it.", id=TIMELINE_DETAIL, className="muted")],
                    className="card timeline-detail"),
                html.Section([html.H2("GPU idle gaps"), gaps_panel(gaps)],
                             className="card timeline-gaps"),
            ],
            className="timeline-panels",
        ),
    ]  # fmt: skip


def layout(
    trace_id: str | None = None, start_ns: str | None = None, end_ns: str | None = None, **_q: str
) -> html.Div:
    """Fresh on every visit; the URL's window (if any) is the first one shown."""
    if not trace_id:
        return html.Div(notice("No trace selected."))
    head = [
        dcc.Link("← Trace", href=f"/traces/{trace_id}", className="back-link"),
        html.H1("Timeline", className="page-title"),
        dcc.Store(id=TIMELINE_ID, data=trace_id),
        html.Div(id=TIMELINE_URL, hidden=True),
    ]
    try:
        body = _view(current_client(), trace_id, _int(start_ns), _int(end_ns))
    except ApiError as e:
        body = [notice(f"Cannot show this trace's timeline: {e.detail}", "error")]
    return html.Div([*head, *body], className="timeline-page")


def _next_window(trigger: Any, value: Any, full: dict[str, int], stores: dict[str, Any]) -> Any:
    """The window a user action asks for, or None to leave it."""
    origin = full["start_ns"]
    if trigger in (TIMELINE_GRAPH, TIMELINE_OVERVIEW):
        if value and value.get("xaxis.autorange"):
            return (full["start_ns"], full["end_ns"])
        return window_from_relayout(value, origin)
    if trigger == TIMELINE_RESET:
        return (full["start_ns"], full["end_ns"])
    if trigger == TIMELINE_STEP and value is not None:
        step = next(s for s in stores["steps"] if s["step"] == value)
        return (step["start_ns"], step["end_ns"])
    if isinstance(trigger, dict) and value:
        data = stores["gaps"] if trigger["type"] == GAP_BUTTON else stores["matches"]
        hit = data[trigger["index"]]
        return around(hit["start_ns"], hit["end_ns"], 2.0 if trigger["type"] == GAP_BUTTON else 5.0)
    return None


@callback(
    Output(TIMELINE_WINDOW, "data"),
    Input(TIMELINE_GRAPH, "relayoutData"),
    Input(TIMELINE_OVERVIEW, "relayoutData"),
    Input(TIMELINE_RESET, "n_clicks"),
    Input(TIMELINE_STEP, "value"),
    Input({"type": GAP_BUTTON, "index": ALL}, "n_clicks"),
    Input({"type": MATCH_BUTTON, "index": ALL}, "n_clicks"),
    Input(TIMELINE_GRAPH, "clickData"),
    State(TIMELINE_RANGE, "data"),
    State(TIMELINE_STEPS, "data"),
    State(TIMELINE_GAP_DATA, "data"),
    State(TIMELINE_MATCH_DATA, "data"),
    State(TIMELINE_WINDOW, "data"),
    prevent_initial_call=True,
)
def set_window(*args: Any) -> dict[str, int]:
    """Zoom, pan, reset, step, gap, match, or click on a merged block: a new window."""
    full, steps, gaps, matches, current = args[7:]
    trigger = ctx.triggered_id
    window: tuple[int, int] | None
    if trigger == TIMELINE_GRAPH and ctx.triggered_prop_ids.get(f"{TIMELINE_GRAPH}.clickData"):
        point = (args[6] or {}).get("points", [{}])[0]
        custom = point.get("customdata") or [0]
        if custom[0] != -1:
            raise dash.exceptions.PreventUpdate
        window = around(custom[1], custom[1] + custom[2], 0.05)
    else:
        value = ctx.triggered[0]["value"]
        stores = {"steps": steps, "gaps": gaps, "matches": matches}
        window = _next_window(trigger, value, full, stores)
    if window is None or (current and (current["start_ns"], current["end_ns"]) == window):
        raise dash.exceptions.PreventUpdate
    return {"start_ns": window[0], "end_ns": window[1]}


@callback(
    Output(TIMELINE_GRAPH, "figure"),
    Output(TIMELINE_OVERVIEW, "figure"),
    Output(TIMELINE_STATUS, "children"),
    Input(TIMELINE_WINDOW, "data"),
    Input(TIMELINE_SEARCH, "value"),
    State(TIMELINE_ID, "data"),
    State(TIMELINE_OVERVIEW_DATA, "data"),
    prevent_initial_call=True,
)
def render(window: dict[str, int], search: str | None, trace_id: str, overview: Any) -> Any:
    """Fetch the window at its level of detail and draw it."""
    client = current_client()
    data = api.get_window(client, trace_id, window["start_ns"], window["end_ns"], MAX_ITEMS)
    span = (data["start_ns"], data["end_ns"])
    figure = timeline_figure(data, search or "")
    return figure, overview_figure(overview, span), _status(data)


@callback(
    Output(TIMELINE_DETAIL, "children"),
    Input(TIMELINE_GRAPH, "clickData"),
    State(TIMELINE_ID, "data"),
    prevent_initial_call=True,
)
def show_detail(click: dict[str, Any] | None, trace_id: str) -> Component:
    """A click on a single event shows it with its CPU launch and kernel stats."""
    points = (click or {}).get("points") or [{}]
    custom = points[0].get("customdata") or [-1]
    if custom[0] == -1:
        raise dash.exceptions.PreventUpdate
    try:
        return detail_panel(api.get_event(current_client(), trace_id, int(custom[0])))
    except ApiError as e:
        return notice(f"Could not load the event: {e.detail}", "error")


@callback(
    Output(TIMELINE_SEARCH_RESULTS, "children"),
    Output(TIMELINE_MATCH_DATA, "data"),
    Input(TIMELINE_SEARCH, "value"),
    State(TIMELINE_ID, "data"),
    prevent_initial_call=True,
)
def run_search(query: str | None, trace_id: str) -> tuple[Component | None, list[Any]]:
    """Names containing the query; matches in view are outlined in the timeline."""
    if not query or not query.strip():
        return None, []
    try:
        result = api.search(current_client(), trace_id, query.strip(), None, None)
    except ApiError as e:
        return notice(f"Search failed: {e.detail}", "error"), []
    return search_panel(result), list(result["matches"])


clientside_callback(
    """function(w) {
        if (!w) { return window.dash_clientside.no_update; }
        const q = new URLSearchParams(window.location.search);
        q.set("start_ns", w.start_ns); q.set("end_ns", w.end_ns);
        window.history.replaceState(null, "", window.location.pathname + "?" + q.toString());
        return "";
    }""",
    Output(TIMELINE_URL, "children"),
    Input(TIMELINE_WINDOW, "data"),
)
