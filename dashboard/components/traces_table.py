"""The traces list as an HTML table: one server page of traces, a checkbox per row, sortable
headers, and a long error shown as its first line with the rest on expand.

Rows keep one height: names, tags and error lines are cut to one line each (their full text
is the cell's tooltip), and only an error the user expands (`<details>`) makes its row
taller. Headers are links to the same list sorted by that column, so a sort is a URL.

Public surface: `traces_table`, `list_href`, `first_line`, and the id types `SELECT`,
`EDIT`, `PAGER`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace
from typing import Any
from urllib.parse import urlencode

from dash import dcc, html

from dashboard.api.traces import PAGE_SIZE, Trace, TraceQuery
from dashboard.components.pager import pager
from dashboard.components.status_badge import progress_bar, status_badge
from dashboard.components.trace_summary import trace_duration
from dashboard.format import format_bytes, format_count, format_timestamp

SELECT = "traces-select"  # pattern-matching id type of a row's checkbox: {"type", "trace"}
EDIT = "traces-edit"  # a row's Edit button: {"type", "trace"}
PAGER = "traces-page"
ERROR_LINE_CHARS = 90  # a one-line error longer than this is cut, with the rest on expand
# (header, the API's sort key or None, whether the column is a number)
COLUMNS = (
    ("Name", "name", False),
    ("Status", "status", False),
    ("Format", None, False),
    ("Size", "size", True),
    ("Events", "events", True),
    ("Duration", None, True),
    ("Created", "created", False),
    ("", None, False),
)


def list_href(query: TraceQuery) -> str:
    """The list's URL for `query` (the traces page is the site's root)."""
    params = query.url_query()
    return "/?" + urlencode(params) if params else "/"


def first_line(text: str) -> tuple[str, bool]:
    """An error's first line, cut to `ERROR_LINE_CHARS`, and whether anything was left out.

    >>> first_line("bad JSON at byte 3\\n  File x.py")
    ('bad JSON at byte 3', True)
    """
    line, _, rest = text.strip().partition("\n")
    if len(line) > ERROR_LINE_CHARS:
        return line[: ERROR_LINE_CHARS - 1] + "…", True
    return line, bool(rest.strip())


def _error(text: str) -> html.Div | html.Details:
    line, more = first_line(text)
    if not more:
        return html.Div(line, className="row-error", title=text)
    return html.Details(
        [
            html.Summary(
                [html.Span(line, className="error-first"), " ", html.Span(className="error-more")]
            ),
            html.Pre(text, className="error-full"),
        ],
        className="row-error row-error-long",
    )


def _status_cell(trace: Trace) -> html.Td:
    children: list[Any] = [status_badge(trace["status"])]
    if trace["status"] == "processing" and (bar := progress_bar(trace.get("progress"))):
        children.append(bar)
    if trace["status"] == "failed" and trace["error"]:
        children.append(_error(trace["error"]))
    return html.Td(children, className="status-cell")


def _events_cell(trace: Trace) -> html.Td:
    counts = trace["event_counts"]
    if not counts:
        return html.Td("—", className="num")
    breakdown = ", ".join(f"{kind} {n:,}" for kind, n in sorted(counts.items()))
    return html.Td(format_count(sum(counts.values())), className="num", title=breakdown)


def _name_cell(trace: Trace) -> html.Td:
    href = f"/traces/{trace['id']}"
    tags = [html.Span(t, className="tag") for t in trace.get("tags") or []]
    note = trace.get("note")
    about = [html.Span(trace["project"], className="muted"), *tags]
    if note:
        about.append(html.Span("note", className="note-mark", title=note))
    return html.Td(
        [
            dcc.Link(trace["name"], href=href, className="trace-name", title=trace["name"]),
            html.Div(about, className="trace-about small"),
        ],
        className="name-cell",
    )


def _created_cell(created_at: str) -> html.Td:
    """To the minute, in UTC like every time on the site; the second is in the tooltip."""
    full = format_timestamp(created_at)
    short = full[:16] if full.endswith(" UTC") else full
    return html.Td(short, className="nowrap muted", title=full)


def _data_attrs(trace: Trace) -> dict[str, Any]:
    """`data-*` hooks for tests and scripts, which should not depend on column order."""
    return {"data-trace-id": trace["id"], "data-status": trace["status"]}


def _row(trace: Trace, selected: Collection[str]) -> html.Tr:
    trace_id = trace["id"]
    box = dcc.Checklist(
        id={"type": SELECT, "trace": trace_id},
        options=[{"label": "", "value": trace_id}],
        value=[trace_id] if trace_id in selected else [],
        className="row-select",
    )
    actions = [
        html.Button("Edit", id={"type": EDIT, "trace": trace_id}, className="link-button"),
        dcc.Link("Open →", href=f"/traces/{trace_id}", className="open-link"),
    ]
    return html.Tr(
        [
            html.Td(box, className="select-cell"),
            _name_cell(trace),
            _status_cell(trace),
            html.Td(trace["format"] or "—"),
            html.Td(format_bytes(trace["size_bytes"]), className="num"),
            _events_cell(trace),
            html.Td(trace_duration(trace), className="num"),
            _created_cell(trace["created_at"]),
            html.Td(actions, className="actions-cell"),
        ],
        className=f"row-{trace['status']}",
        **_data_attrs(trace),
    )


def _header(query: TraceQuery) -> html.Thead:
    cells: list[html.Th] = [html.Th(className="select-cell")]
    for title, key, numeric in COLUMNS:
        if key is None:
            cells.append(html.Th(title, className="num" if numeric else None))
            continue
        on = query.sort == key
        order = (
            ("asc" if query.order == "desc" else "desc")
            if on
            else ("asc" if key == "name" else "desc")
        )
        arrow = (" ↑" if query.order == "asc" else " ↓") if on else ""
        link = dcc.Link(
            title + arrow, href=list_href(replace(query, sort=key, order=order, page=0))
        )
        cells.append(
            html.Th(
                link,
                className=" ".join(
                    filter(None, ["sortable", "num" if numeric else "", "sorted" if on else ""])
                ),
            )
        )
    return html.Thead(html.Tr(cells))


def traces_table(
    traces: Sequence[Trace],
    total: int | None = None,
    query: TraceQuery | None = None,
    selected: Collection[str] = (),
) -> html.Div:
    """One page of the list with its header, position and page buttons, or why it is empty."""
    query = query or TraceQuery()
    if not traces:
        text = (
            "No traces match these filters."
            if query.filtered()
            else "No traces yet. Upload one above."
        )
        return html.Div(text, className="empty-state")
    table = html.Table(
        [_header(query), html.Tbody([_row(t, selected) for t in traces])],
        className="data-table traces-list",
    )
    total = len(traces) if total is None else total
    first = query.page * PAGE_SIZE
    shown = f"Showing {first + 1:,}\u2013{first + len(traces):,} of {total:,}."
    pages = max(1, -(-total // PAGE_SIZE))
    footer = html.Div(
        [html.Div(shown, className="muted"), pager(min(query.page, pages - 1), pages, PAGER)],
        className="list-footer",
    )
    return html.Div([table, footer], className="table-wrap traces-wrap")
