"""The Query tab: a SQL editor with the schema beside it, example queries, and the result
as a grid (sorted and paged in the browser, downloadable as CSV) and, when its shape
allows, a chart.

Example queries are links: each sets `?tab=query&sql=...`, so opening one runs it, and
any query's URL reproduces it. Result cells are plain text to the grid (no renderer, no
code), since names come from uploaded traces. Number columns named in ns or bytes, as the
views' are, read by magnitude (`4.56 ms`); the CSV keeps the raw numbers.

Public surface: `query_panel`, `empty_sql_hint`.
"""

from __future__ import annotations

import json
from typing import Any

from dash import dcc, html
from dash.development.base_component import Component
from dash_ag_grid import AgGrid

from dashboard.api.query import QueryResult, QuerySchema
from dashboard.components import notice
from dashboard.components.grid import DURATION_NS, SIZE_BYTES, browser_grid
from dashboard.components.query_examples import EXAMPLES
from dashboard.components.trace_views import tab_href
from dashboard.figures.query import is_bytes_column, is_ns_column, query_figure
from dashboard.format import format_count

__all__ = ["empty_sql_hint", "query_panel"]

# Shown greyed in the empty editor; Run with nothing typed offers to run it.
PLACEHOLDER_SQL = "SELECT name, sum(dur_ns) FROM kernels GROUP BY name ORDER BY 2 DESC"

_JS_SAFE = 2**53  # integers past this lose digits as JavaScript numbers: shown as text
_NUMBER_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "FLOAT", "DOUBLE",
                 "DECIMAL", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT")  # fmt: skip


def _cell(value: Any) -> Any:
    """A value as the grid shows it (and its CSV writes); the API's JSON keeps the exact one."""
    if isinstance(value, float):
        return round(value, 3)
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > _JS_SAFE:
        return str(value)
    return value


def _unit_cells(name: str) -> dict[str, Any]:
    """A number column named like the views' ns and byte columns reads by magnitude, as on
    every other page; the CSV keeps it raw."""
    if is_ns_column(name):
        return DURATION_NS
    return SIZE_BYTES if is_bytes_column(name) else {}


def _grid(result: QueryResult, id_prefix: str) -> AgGrid:
    numeric = [t.split("(")[0] in _NUMBER_TYPES for t in result["types"]]
    column_defs = [
        {
            "field": f"c{i}",
            "headerName": name,
            "headerTooltip": kind,
            "sortable": True,
            "type": "numericColumn" if numeric[i] else None,
            "cellClass": "grid-num" if numeric[i] else "grid-text",
            "tooltipField": None if numeric[i] else f"c{i}",
            "width": 140 if numeric[i] else 340,
            **(_unit_cells(name) if numeric[i] else {}),
        }
        for i, (name, kind) in enumerate(zip(result["columns"], result["types"], strict=True))
    ]
    rows = [{f"c{i}": _cell(v) for i, v in enumerate(row)} for row in result["rows"]]
    column_defs = [{k: v for k, v in c.items() if v is not None} for c in column_defs]
    return browser_grid(f"{id_prefix}-grid", column_defs, rows, "query.csv")


def _result(result: QueryResult, id_prefix: str) -> list[Component]:
    n = len(result["rows"])
    summary = f"{format_count(n)} row{'s' if n != 1 else ''}"
    if result.get("truncated_by") == "bytes":
        summary += " (cut at the answer's size limit, QUERY_MAX_ANSWER_BYTES; more matched)"
    elif result["truncated"]:
        summary += f" (cut at the limit of {format_count(n)}; more matched)"
    summary += f" · {result['elapsed_ms']:.0f} ms"
    parts: list[Component] = [
        html.Div(
            [
                html.Span(summary, id=f"{id_prefix}-summary", className="muted"),
                html.Button("Download CSV", id=f"{id_prefix}-csv", className="button"),
            ],
            className="query-result-bar",
        ),
        _grid(result, id_prefix),
    ]
    figure = query_figure(result["columns"], result["types"], result["rows"])
    if figure is not None:
        parts.append(
            dcc.Graph(figure=figure, id=f"{id_prefix}-chart", config={"displaylogo": False})
        )
    return parts


def _schema(schema: QuerySchema | None) -> Component:
    if schema is None:
        return html.Div("Could not load the schema.", className="muted")
    views = [
        html.Details(
            [
                html.Summary(
                    [html.Code(v["name"]), " ", html.Span(v["description"], className="muted")]
                ),
                html.Ul(
                    [
                        html.Li(
                            [
                                html.Code(c["name"]),
                                " ",
                                html.Span(c["type"], className="query-type"),
                            ],
                            title=c["description"],
                        )
                        for c in v["columns"]
                    ]
                ),
            ],
            open=v["name"] in ("events", "kernels"),
        )
        for v in schema["views"]
    ]
    return html.Div([html.H3("Schema"), *views], className="query-schema")


def query_panel(
    trace_id: str,
    sql: str,
    schema: QuerySchema | None,
    result: QueryResult | None,
    error: str | None,
    id_prefix: str,
) -> Component:
    """The tab: editor, examples and schema; then the error, or the result."""
    examples = [
        dcc.Link(name, href=tab_href(trace_id, "query", sql=text), className="query-example")
        for name, text in EXAMPLES.items()
    ]
    editor = html.Div(
        [
            html.Div(
                [html.Span("Examples:", className="muted"), *examples], className="query-examples"
            ),
            dcc.Textarea(
                id=f"{id_prefix}-sql",
                value=sql,
                placeholder=PLACEHOLDER_SQL,
                spellCheck=False,
                className="query-sql",
            ),
            html.Div(
                [
                    html.Button("Run", id=f"{id_prefix}-run", className="button"),
                    html.Div(id=f"{id_prefix}-hint", className="query-hint"),
                ],
                className="query-run-bar",
            ),
        ],
        className="query-editor",
    )
    body: list[Component] = [html.Div([editor, _schema(schema)], className="query-layout")]
    if error:
        body.append(notice(error, "error", f"{id_prefix}-error"))
    elif result is not None:
        body.extend(_result(result, id_prefix))
    return html.Section(body, className="card", id=id_prefix)


def empty_sql_hint(trace_id: str) -> Component:
    """What Run says with an empty editor: the grey text is only a hint, so say what to
    do, and offer to run that hint (a link, as the examples are)."""
    return html.Span(
        [
            "The editor is empty (the grey text is only a hint). Type a query, pick an "
            "example above, or ",
            dcc.Link("run the hint", href=tab_href(trace_id, "query", sql=PLACEHOLDER_SQL)),
            ".",
        ],
        role="status",
    )
