"""`/series?project=&benchmark=&metric=[&branch=]`: one series over commits.

p50 with its p05-p95 band, SLA thresholds, and change points found by E-divisive. A point
whose run carries a trace opens that trace on click; each change point links to the
compare view of the traces on either side of it, when both exist.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import dash
from dash import Input, Output, callback, dcc, html
from dash.development.base_component import Component

from dashboard.api_client import ApiError, current_client
from dashboard.clients.metrics import get_series
from dashboard.components import notice
from dashboard.figures.metrics import series_figure

dash.register_page(  # type: ignore[no-untyped-call]
    __name__, path="/series", title="Series · perfdash", name="Series", order=21
)

SERIES_GRAPH = "series-graph"
SERIES_GO = "series-go"


def _nearest_trace(points: list[dict[str, Any]], indexes: range) -> str | None:
    return next((points[i]["trace_id"] for i in indexes if points[i].get("trace_id")), None)


def _change_list(series: dict[str, Any]) -> html.Ul:
    points, items = series["points"], []
    for cp in series["change_points"]:
        i = cp["index"]
        before = _nearest_trace(points, range(i - 1, -1, -1))
        after = _nearest_trace(points, range(i, len(points)))
        text = (
            f"{cp['shift_pct']:+.1f}% at commit {cp['commit']} "
            f"({cp['before']:.4g} → {cp['after']:.4g}, p = {cp['p_value']:.3f})"
        )
        link = (
            dcc.Link(" compare traces", href=f"/compare?{urlencode({'a': before, 'b': after})}")
            if before and after
            else html.Span(" (no traces to compare)", className="muted")
        )
        items.append(html.Li([text, link]))
    return html.Ul(items or [html.Li("No significant change point.")], className="series-changes")


def layout(
    project: str = "",
    benchmark: str = "",
    metric: str = "",
    branch: str | None = None,
    **_query: str,
) -> html.Div:
    """Fetched on every visit. Every state keeps the graph and the location the click
    callback names, so Dash never reports an ID missing from the layout."""
    if not (project and benchmark and metric):
        return _without_series(notice("Open a series from the SLA board or the runs page."))
    try:
        series = get_series(
            current_client(), project=project, benchmark=benchmark, metric=metric, branch=branch
        )
    except ApiError as e:
        return _without_series(notice(f"Could not load the series: {e.detail}", "error"))
    where = f"{project} / {benchmark}" + (f" on {branch}" if branch else "")
    return html.Div(
        [
            html.H1(metric, className="page-title"),
            html.Div(f"{where} · {len(series['points'])} runs", className="muted"),
            html.Section(
                dcc.Graph(
                    id=SERIES_GRAPH, figure=series_figure(series), config={"displaylogo": False}
                ),
                className="card",
            ),
            html.Section([html.H2("Change points"), _change_list(series)], className="card"),
            dcc.Location(id=SERIES_GO, refresh=True),
        ]
    )


def _without_series(message: Component) -> html.Div:
    hidden = {"display": "none"}
    return html.Div([message, dcc.Graph(id=SERIES_GRAPH, style=hidden), dcc.Location(id=SERIES_GO)])


@callback(Output(SERIES_GO, "href"), Input(SERIES_GRAPH, "clickData"), prevent_initial_call=True)
def _open_trace(click: dict[str, Any] | None) -> str:
    """A click on a point that has a trace opens that trace."""
    trace_id = ((click or {}).get("points") or [{}])[0].get("customdata")
    if not trace_id:
        raise dash.exceptions.PreventUpdate
    return f"/traces/{trace_id}"
