"""The "All traces" section of the traces page: a server-paged list with filters, search,
sort, row selection, compare, delete and edit, and the callbacks that serve it.

The URL is the state (`/?project=llm&tag=fp8&sort=size&order=asc&page=2`): every filter,
header and page button writes it (`callback-nav`), and the page renders from it, so a view
is a link. The list is re-read every `POLL_MS` for status changes, but redrawn only when
it changed, so checked rows and an expanded error stay as they are.

Public surface: `section`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any
from urllib.parse import urlencode

import dash
from dash import ALL, Input, Output, State, callback, dcc, html

from dashboard.api.client import ApiError, current_client
from dashboard.api.traces import (
    TraceFacets,
    TraceQuery,
    delete_traces,
    get_facets,
    list_trace_page,
    update_trace,
)
from dashboard.components import notice
from dashboard.components import traces_controls as ui
from dashboard.components.traces_table import (
    EDIT,
    PAGER,
    SELECT,
    list_href,
    traces_table,
)

TRACES_TABLE = "traces-table"
TRACES_URL = "traces-url"
TRACES_QUERY = "traces-query"
TRACES_ROWS = "traces-rows"  # the shown page: id -> name, tags, note
TRACES_SEEN = "traces-seen"  # what the shown page was drawn from, to skip equal redraws
TRACES_SELECTION = "traces-selection"
TRACES_NOTICE = "traces-list-notice"
TRACES_POLL = "traces-poll"
POLL_MS = 1500
Rendered = tuple[html.Div, dict[str, Any], str]


def _render(query: TraceQuery, selected: list[str] | None = None) -> Rendered:
    """The table for `query`, the rows it shows, and a fingerprint of what it shows."""
    try:
        page = list_trace_page(current_client(), query)
    except ApiError as e:
        return html.Div(notice(f"Could not load traces: {e.detail}", "error")), {}, ""
    items = page["items"]
    rows = {
        t["id"]: {"name": t["name"], "tags": t.get("tags") or [], "note": t.get("note")}
        for t in items
    }
    seen = repr(
        (page["count"], [(t["id"], t["status"], t["updated_at"], t.get("progress")) for t in items])
    )
    return traces_table(items, page["count"], query, set(selected or ())), rows, seen


def _facets() -> TraceFacets:
    try:
        return get_facets(current_client())
    except ApiError:
        return TraceFacets(projects=[], formats=[], tags=[])


def section(query: dict[str, Any]) -> html.Section:
    """The list, its controls and dialogs, for the URL's query."""
    parsed = TraceQuery.from_url(query)
    table, rows, seen = _render(parsed)
    return html.Section(
        [
            dcc.Location(id=TRACES_URL, refresh="callback-nav"),
            dcc.Store(id=TRACES_QUERY, data=query),
            dcc.Store(id=TRACES_ROWS, data=rows),
            dcc.Store(id=TRACES_SEEN, data=seen),
            dcc.Store(id=TRACES_SELECTION, data=[]),
            html.Div([html.H2("All traces"), ui.toolbar()], className="list-head"),
            ui.filter_bar(parsed, _facets()),
            html.Div(id=TRACES_NOTICE),
            html.Div(table, id=TRACES_TABLE),
            ui.delete_dialog(),
            ui.edit_dialog(),
            dcc.Interval(id=TRACES_POLL, interval=POLL_MS),
        ],
        className="card",
    )


@callback(
    Output(TRACES_URL, "href", allow_duplicate=True),
    *(Input(f, "value") for f in ui.FILTERS),
    Input(ui.FILTER_DATES, "start_date"),
    Input(ui.FILTER_DATES, "end_date"),
    Input(ui.FILTER_CLEAR, "n_clicks"),
    Input({"type": PAGER, "role": ALL, "page": ALL}, "n_clicks"),
    State(TRACES_QUERY, "data"),
    prevent_initial_call=True,
)
def to_url(*values: Any) -> str:
    """Put the filters, search and page asked for in the URL; the list follows it."""
    *filters, clear, _pages, query = values
    old = TraceQuery.from_url(query or {})
    trigger = dash.ctx.triggered_id
    if trigger == ui.FILTER_CLEAR and clear:
        return list_href(replace(TraceQuery(), sort=old.sort, order=old.order))
    if isinstance(trigger, dict):
        if not dash.ctx.triggered[0]["value"]:
            raise dash.exceptions.PreventUpdate
        new = replace(old, page=int(trigger["page"]))
    else:
        names = ("project", "format", "status", "tag", "q", "created_from", "created_to")
        picked = {n: str(v or "").strip() for n, v in zip(names, filters, strict=True)}
        picked |= {n: picked[n][:10] for n in ("created_from", "created_to")}  # the day
        new = replace(old, page=0, **picked)
    if new == old:
        raise dash.exceptions.PreventUpdate
    return list_href(new)


@callback(
    Output({"type": SELECT, "trace": ALL}, "value"),
    Input(ui.SELECT_ALL, "value"),
    State({"type": SELECT, "trace": ALL}, "id"),
    prevent_initial_call=True,
)
def select_all(value: list[str] | None, ids: list[dict[str, str]]) -> list[list[str]]:
    """Check or uncheck every row of the page."""
    return [[i["trace"]] if value else [] for i in ids]


@callback(
    Output(TRACES_SELECTION, "data"),
    Output(ui.SELECTED, "children"),
    Output(ui.COMPARE, "disabled"),
    Output(ui.DELETE, "disabled"),
    Output(ui.DELETE, "children"),
    Input({"type": SELECT, "trace": ALL}, "value"),
    Input(TRACES_ROWS, "data"),  # a redrawn page (after a delete: fewer rows)
)
def selection(
    values: list[list[str] | None], _rows: dict[str, Any]
) -> tuple[list[str], str, bool, bool, str]:
    """The checked rows; Compare needs exactly two, Delete at least one."""
    chosen = [v for checked in values for v in checked or []]
    text = f"{len(chosen)} selected" if chosen else "None selected"
    delete = f"Delete {len(chosen)}" if chosen else "Delete"
    return chosen, text, len(chosen) != 2, not chosen, delete


@callback(
    Output(TRACES_URL, "href", allow_duplicate=True),
    Input(ui.COMPARE, "n_clicks"),
    State(TRACES_SELECTION, "data"),
    prevent_initial_call=True,
)
def compare(clicks: int | None, chosen: list[str]) -> str:
    """Open the compare page with the two checked traces as A and B."""
    if not clicks or len(chosen) != 2:
        raise dash.exceptions.PreventUpdate
    return "/compare?" + urlencode({"a": chosen[0], "b": chosen[1]})


@callback(
    Output(ui.DELETE_DIALOG, "className"),
    Output(ui.DELETE_NAMES, "children"),
    Output(ui.DELETE_ERROR, "children"),
    Input(ui.DELETE, "n_clicks"),
    Input(ui.DELETE_CANCEL, "n_clicks"),
    State(TRACES_SELECTION, "data"),
    State(TRACES_ROWS, "data"),
    prevent_initial_call=True,
)
def ask_delete(
    _open: int | None, _cancel: int | None, chosen: list[str], rows: dict[str, Any]
) -> tuple[str, Any, Any]:
    """Show the confirmation naming every checked trace (or close it on Cancel)."""
    if dash.ctx.triggered_id == ui.DELETE_CANCEL or not chosen:
        return ui.HIDDEN, None, None
    names = [rows.get(i, {}).get("name", i) for i in chosen]
    return ui.SHOWN, ui.delete_question(names), None


@callback(
    Output(ui.DELETE_DIALOG, "className", allow_duplicate=True),
    Output(ui.DELETE_ERROR, "children", allow_duplicate=True),
    Output(TRACES_NOTICE, "children", allow_duplicate=True),
    Output(TRACES_TABLE, "children", allow_duplicate=True),
    Output(TRACES_ROWS, "data", allow_duplicate=True),
    Output(TRACES_SEEN, "data", allow_duplicate=True),
    Input(ui.DELETE_CONFIRM, "n_clicks"),
    State(TRACES_SELECTION, "data"),
    State(TRACES_QUERY, "data"),
    prevent_initial_call=True,
)
def confirm_delete(clicks: int | None, chosen: list[str], query: dict[str, Any]) -> tuple[Any, ...]:
    """Delete the checked traces through the API (all or none), then redraw the list."""
    if not clicks or not chosen:
        raise dash.exceptions.PreventUpdate
    try:
        deleted = delete_traces(current_client(), chosen)["ids"]
    except ApiError as e:
        nothing = dash.no_update
        return (
            ui.SHOWN,
            notice(f"Nothing was deleted: {e.detail}", "error"),
            nothing,
            nothing,
            nothing,
            nothing,
        )
    done = notice(f"Deleted {len(deleted)} trace{'s' if len(deleted) != 1 else ''}.", "success")
    return ui.HIDDEN, None, done, *_render(TraceQuery.from_url(query or {}))


@callback(
    Output(ui.EDIT_DIALOG, "className"),
    Output(ui.EDIT_TRACE, "data"),
    Output(ui.EDIT_NAME, "value"),
    Output(ui.EDIT_TAGS, "value"),
    Output(ui.EDIT_NOTE, "value"),
    Output(ui.EDIT_ERROR, "children"),
    Input({"type": EDIT, "trace": ALL}, "n_clicks"),
    Input(ui.EDIT_CANCEL, "n_clicks"),
    State(TRACES_ROWS, "data"),
    prevent_initial_call=True,
)
def open_edit(
    _clicks: list[int | None], _cancel: int | None, rows: dict[str, Any]
) -> tuple[Any, ...]:
    """Open the editor filled with the trace's name, tags and note (or close it)."""
    trigger = dash.ctx.triggered_id
    if not isinstance(trigger, dict):
        return ui.HIDDEN, None, "", "", "", None
    if not dash.ctx.triggered[0]["value"] or trigger["trace"] not in rows:
        raise dash.exceptions.PreventUpdate
    row = rows[trigger["trace"]]
    return ui.SHOWN, trigger["trace"], row["name"], ", ".join(row["tags"]), row["note"] or "", None


@callback(
    Output(ui.EDIT_DIALOG, "className", allow_duplicate=True),
    Output(ui.EDIT_ERROR, "children", allow_duplicate=True),
    Output(TRACES_TABLE, "children", allow_duplicate=True),
    Output(TRACES_ROWS, "data", allow_duplicate=True),
    Output(TRACES_SEEN, "data", allow_duplicate=True),
    Input(ui.EDIT_SAVE, "n_clicks"),
    State(ui.EDIT_TRACE, "data"),
    State(ui.EDIT_NAME, "value"),
    State(ui.EDIT_TAGS, "value"),
    State(ui.EDIT_NOTE, "value"),
    State(TRACES_QUERY, "data"),
    State(TRACES_SELECTION, "data"),
    prevent_initial_call=True,
)
def save_edit(
    clicks: int | None,
    trace_id: str | None,
    name: str | None,
    tags: str | None,
    note: str | None,
    query: dict[str, Any],
    chosen: list[str],
) -> tuple[Any, ...]:
    """PATCH the trace; the API's refusal (a bad tag, a missing role) stays in the dialog."""
    if not clicks or not trace_id:
        raise dash.exceptions.PreventUpdate
    changes = {
        "name": name or "",
        "tags": [t for t in (tags or "").split(",") if t.strip()],
        "note": note or "",
    }
    try:
        update_trace(current_client(), trace_id, changes)
    except ApiError as e:
        nothing = dash.no_update
        return ui.SHOWN, notice(f"Not saved: {e.detail}", "error"), nothing, nothing, nothing
    return ui.HIDDEN, None, *_render(TraceQuery.from_url(query or {}), chosen)


@callback(
    Output(TRACES_TABLE, "children"),
    Output(TRACES_ROWS, "data"),
    Output(TRACES_SEEN, "data"),
    Input(TRACES_POLL, "n_intervals"),
    State(TRACES_QUERY, "data"),
    State(TRACES_SEEN, "data"),
    State(TRACES_SELECTION, "data"),
    prevent_initial_call=True,
)
def refresh(_n: int | None, query: dict[str, Any], seen: str, chosen: list[str]) -> Rendered:
    """Re-read the page so the workers' status changes show; redraw only if it changed."""
    rendered = _render(TraceQuery.from_url(query or {}), chosen)
    if rendered[2] == seen:
        raise dash.exceptions.PreventUpdate
    return rendered
