"""`/traces/<trace_id>/timeline`: the zoomable timeline of one trace.

Every zoom, pan, step jump, gap or search click sets one window store; one callback
fetches that window from the API (which answers at the right level of detail) and
redraws. The window also goes into the URL (`?start_ns=&end_ns=`) with
`history.replaceState`, so a link reopens the same view without a page reload.
"""

from __future__ import annotations

from typing import Any

import dash
from dash import ALL, Input, Output, Patch, State, callback, clientside_callback, ctx, dcc, html
from dash.development.base_component import Component

from dashboard.api import timeline as api
from dashboard.api.client import ApiClient, ApiError, current_client
from dashboard.components import notice
from dashboard.components.step_marker import AUTOMATIC, marker_note, marker_options
from dashboard.components.timeline_panels import (
    GAP_BUTTON,
    LANE_GROUPS,
    MATCH_BUTTON,
    around,
    detail_panel,
    gaps_panel,
    lanes_for_groups,
    search_panel,
    step_options,
    window_from_relayout,
)
from dashboard.figures.timeline import overview_figure, timeline_figure, window_shapes
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
TIMELINE_STEPS = "timeline-steps"
TIMELINE_GAP_DATA = "timeline-gap-data"
TIMELINE_MATCH_DATA = "timeline-match-data"
TIMELINE_GRAPH = "timeline-graph"
TIMELINE_OVERVIEW = "timeline-overview"
# The graphs' x-axis zooms, filtered in the browser from their `relayoutData` (see _ZOOMS_ONLY).
TIMELINE_GRAPH_ZOOM = "timeline-graph-zoom"
TIMELINE_OVERVIEW_ZOOM = "timeline-overview-zoom"
TIMELINE_STEP = "timeline-step"
TIMELINE_MARKER = "timeline-marker"
TIMELINE_MARKER_NOTE = "timeline-marker-note"
TIMELINE_SEARCH = "timeline-search"
TIMELINE_SEARCH_RESULTS = "timeline-search-results"
TIMELINE_RESET = "timeline-reset"
TIMELINE_DETAIL = "timeline-detail"
TIMELINE_STATUS = "timeline-status"
TIMELINE_URL = "timeline-url"
TIMELINE_GROUPS = "timeline-groups"
TIMELINE_LANES = "timeline-lanes"
MAX_ITEMS = 2000  # ~400 bars a lane on an ~800 px plot; more only slows the SVG
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


def _step_picker(steps: api.Steps) -> list[Component]:
    """Jump to step, and the step marker: which one is used (or that none was found)."""
    note = marker_note(steps["marker"], steps["marker_source"], len(steps["items"]))
    return [
        dcc.Dropdown(id=TIMELINE_STEP, options=step_options(steps["items"]),
                     placeholder="Jump to step…" if steps["items"] else "No steps to jump to",
                     clearable=True, className="timeline-step"),
        html.Label("Step marker", htmlFor=TIMELINE_MARKER, className="muted small"),
        dcc.Dropdown(id=TIMELINE_MARKER, options=marker_options(steps["options"]),
                     value=steps["chosen"] or AUTOMATIC, clearable=False,
                     className="timeline-marker", placeholder="Step marker…"),
        html.Div(note, id=TIMELINE_MARKER_NOTE, className="muted small timeline-marker-note"),
    ]  # fmt: skip


def _controls(trace_id: str, steps: api.Steps) -> html.Div:
    return html.Div(
        [
            *_step_picker(steps),
            dcc.Input(id=TIMELINE_SEARCH, type="search", placeholder="Search names…",
                      debounce=True, className="timeline-search"),
            html.Button("Reset zoom", id=TIMELINE_RESET, className="button"),
            html.A("Download Chrome trace JSON", href=api.export_path(trace_id),
                   download=f"{trace_id}.trace.json", className="button button-secondary",
                   title="Opens in Perfetto UI, with CPU launch → kernel flows"),
            html.A("Download events (Parquet)", href=api.events_parquet_path(trace_id),
                   download=f"{trace_id}.events.parquet", className="button button-secondary",
                   title="The stored events, for pandas, polars or DuckDB"),
            dcc.Checklist(id=TIMELINE_GROUPS, value=list(LANE_GROUPS), inline=True,
                          options=[{"label": v, "value": k} for k, v in LANE_GROUPS.items()],
                          className="timeline-groups"),
        ],
        className="timeline-controls",
    )  # fmt: skip


def _view(client: ApiClient, trace_id: str, start: int | None, end: int | None) -> list[Component]:
    window = api.get_window(client, trace_id, start, end, MAX_ITEMS)
    overview = api.get_overview(client, trace_id)
    steps, gaps = api.get_steps(client, trace_id), api.get_gaps(client, trace_id)
    return _components(trace_id, window, overview, steps, gaps)


def _components(
    trace_id: str,
    window: api.TimelineWindow,
    overview: api.Overview,
    steps: api.Steps,
    gaps: api.Gaps,
) -> list[Component]:
    span = (window["start_ns"], window["end_ns"])
    full = {"start_ns": window["trace_start_ns"], "end_ns": window["trace_end_ns"]}
    return [
        dcc.Store(id=TIMELINE_WINDOW, data={"start_ns": span[0], "end_ns": span[1]}),
        dcc.Store(id=TIMELINE_RANGE, data=full),
        dcc.Store(id=TIMELINE_STEPS, data=steps["items"]),
        dcc.Store(id=TIMELINE_GAP_DATA, data=gaps["items"]),
        dcc.Store(id=TIMELINE_MATCH_DATA, data=[]),
        dcc.Store(id=TIMELINE_LANES, data=window["lanes"]),
        dcc.Store(id=TIMELINE_GRAPH_ZOOM),
        dcc.Store(id=TIMELINE_OVERVIEW_ZOOM),
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


def _empty_view() -> list[Component]:
    window: api.TimelineWindow = {
        "trace_id": "", "start_ns": 0, "end_ns": 1, "trace_start_ns": 0, "trace_end_ns": 1,
        "mode": "events", "level": None, "merge_gap_ns": None, "max_items": 0,
        "estimated_events": 0, "truncated": False, "lanes": [], "items": [],
    }  # fmt: skip
    overview: api.Overview = {"trace_start_ns": 0, "trace_end_ns": 1, "devices": 0, "bins": []}
    gaps: api.Gaps = {"min_ns": 0, "count": 0, "rule": "", "items": []}
    steps: api.Steps = {"trace_id": "", "items": [], "marker": None, "marker_source": None,
                        "chosen": None, "options": []}  # fmt: skip
    return _components("", window, overview, steps, gaps)


def layout(
    trace_id: str | None = None, start_ns: str | None = None, end_ns: str | None = None, **_q: str
) -> html.Div:
    """Fresh on every visit; the URL's window (if any) is the first one shown."""
    if not trace_id:  # Dash's validation call: every component ID, no data
        return html.Div([dcc.Store(id=TIMELINE_ID), html.Div(id=TIMELINE_URL), *_empty_view()])
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
    if trigger in (TIMELINE_GRAPH_ZOOM, TIMELINE_OVERVIEW_ZOOM):
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


def _clicked_block(click: dict[str, Any] | None) -> tuple[int, int] | None:
    """A click on a merged block (customdata id -1) zooms into it; events show details."""
    custom = ((click or {}).get("points") or [{}])[0].get("customdata") or [0]
    if custom[0] != -1:
        raise dash.exceptions.PreventUpdate
    return around(custom[1], custom[1] + custom[2], 0.05)


@callback(
    output={
        "window": Output(TIMELINE_WINDOW, "data"),
        "figure": Output(TIMELINE_GRAPH, "figure"),
        "overview": Output(TIMELINE_OVERVIEW, "figure"),
        "status": Output(TIMELINE_STATUS, "children"),
    },
    inputs={
        # What moves the window; `_next_window` reads the one that fired from `ctx`.
        "moves": {
            "graph": Input(TIMELINE_GRAPH_ZOOM, "data"),
            "overview": Input(TIMELINE_OVERVIEW_ZOOM, "data"),
            "reset": Input(TIMELINE_RESET, "n_clicks"),
            "step": Input(TIMELINE_STEP, "value"),
            "gap": Input({"type": GAP_BUTTON, "index": ALL}, "n_clicks"),
            "match": Input({"type": MATCH_BUTTON, "index": ALL}, "n_clicks"),
        },
        "click": Input(TIMELINE_GRAPH, "clickData"),
        "search": Input(TIMELINE_SEARCH, "value"),
        "groups": Input(TIMELINE_GROUPS, "value"),
    },
    state={
        "full": State(TIMELINE_RANGE, "data"),
        "steps": State(TIMELINE_STEPS, "data"),
        "gaps": State(TIMELINE_GAP_DATA, "data"),
        "matches": State(TIMELINE_MATCH_DATA, "data"),
        "current": State(TIMELINE_WINDOW, "data"),
        "trace_id": State(TIMELINE_ID, "data"),
        "all_lanes": State(TIMELINE_LANES, "data"),
    },
    prevent_initial_call=True,
)
def update(
    *,
    moves: dict[str, Any],
    click: dict[str, Any] | None,
    search: str | None,
    groups: list[str] | None,
    full: dict[str, int],
    steps: list[api.Step],
    gaps: list[api.Gap],
    matches: list[api.EventWindow],
    current: dict[str, int],
    trace_id: str,
    all_lanes: list[api.Lane],
) -> dict[str, Any]:
    """Any zoom, pan, reset, step, gap, match, block click, search or lane-group toggle:
    fetch and redraw, in one round trip (a separate window-store callback cost a second)."""
    del moves  # only which one fired matters, and its value: both come from `ctx`
    trigger, value = ctx.triggered_id, ctx.triggered[0]["value"]
    window: tuple[int, int] | None = (current["start_ns"], current["end_ns"])
    lanes = lanes_for_groups(all_lanes, groups)
    if lanes == []:
        raise dash.exceptions.PreventUpdate  # nothing ticked: keep the last drawing
    if trigger == TIMELINE_GRAPH and f"{TIMELINE_GRAPH}.clickData" in ctx.triggered_prop_ids:
        window = _clicked_block(click)
    elif trigger not in (TIMELINE_SEARCH, TIMELINE_GROUPS):
        stores = {"steps": steps, "gaps": gaps, "matches": matches}
        window = _next_window(trigger, value, full, stores)
        if window is None or window == (current["start_ns"], current["end_ns"]):
            raise dash.exceptions.PreventUpdate
    assert window is not None
    data = api.get_window(current_client(), trace_id, window[0], window[1], MAX_ITEMS, lanes)
    shade = Patch()
    shade["layout"]["shapes"] = window_shapes(full["start_ns"], full["end_ns"], window)
    return {
        "window": {"start_ns": window[0], "end_ns": window[1]},
        "figure": timeline_figure(data, search or ""),
        "overview": shade,
        "status": _status(data),
    }


@callback(
    Output(TIMELINE_STEPS, "data"),
    Output(TIMELINE_STEP, "options"),
    Output(TIMELINE_STEP, "value"),
    Output(TIMELINE_MARKER_NOTE, "children"),
    Input(TIMELINE_MARKER, "value"),
    State(TIMELINE_ID, "data"),
    prevent_initial_call=True,
)
def choose_marker(marker: str | None, trace_id: str) -> tuple[Any, ...]:
    """A step marker picked for this trace is kept (the API re-derives its step times)."""
    try:
        steps = api.set_step_marker(current_client(), trace_id, marker or None)
    except ApiError as e:
        return dash.no_update, dash.no_update, None, notice(f"Not kept: {e.detail}", "error")
    note = marker_note(steps["marker"], steps["marker_source"], len(steps["items"]))
    return steps["items"], step_options(steps["items"]), None, note


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


# Only an x-axis zoom, pan or reset may reach `update`. Any other relayout (Plotly's
# autosize as a graph settles, a drag-mode change) would come back "no update", and Dash
# then drops the answer of the same callback still in flight (plotly/dash#1861): a step
# jump seen to do nothing in CI.
_ZOOMS_ONLY = """function(relayout) {
    if (!relayout) { return window.dash_clientside.no_update; }
    const zoom = Object.keys(relayout).some(
        k => k.startsWith("xaxis.range") || k === "xaxis.autorange");
    return zoom ? relayout : window.dash_clientside.no_update;
}"""
_ZOOMED_GRAPHS = (
    (TIMELINE_GRAPH, TIMELINE_GRAPH_ZOOM),
    (TIMELINE_OVERVIEW, TIMELINE_OVERVIEW_ZOOM),
)
for _graph, _zoom in _ZOOMED_GRAPHS:
    clientside_callback(
        _ZOOMS_ONLY, Output(_zoom, "data"), Input(_graph, "relayoutData"), prevent_initial_call=True
    )


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
