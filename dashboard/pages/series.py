"""`/series?project=&benchmark=&metric=[&branch=]`: one series over commits.

p50 with its p05-p95 band, the noise band from A/A runs (±MDC, with a bimodality
warning; runs flagged throttled or contended drawn hollow), SLA thresholds, change points
found by E-divisive (a change for the worse is the first bad commit the SLA verdicts
name), the SLAs over the series, accepted baselines, and a form to accept a new one (an
SLA change: admins or tokens with `slas:write`). A point whose run carries a trace opens
that trace on click; each change point links to the compare view of the traces on either
side of it, when both exist.
When the series is a benchmark spec's and a bisect of it found a commit, the chart marks
it and a card links to the bisect panel (issue 22).
"""

from __future__ import annotations

from typing import Any

import dash
from dash import Input, Output, State, callback, dcc, html
from dash.development.base_component import Component

from dashboard.api.benchmarks import Bisect, list_bisects
from dashboard.api.client import ApiError, current_client
from dashboard.api.metrics import accept_baseline, get_series
from dashboard.components import notice
from dashboard.components.bisect_panel import bisect_summary
from dashboard.components.series_panels import (
    SERIES_ACCEPT_COMMIT,
    SERIES_ACCEPT_GO,
    SERIES_ACCEPT_REASON,
    SERIES_ACCEPT_RESULT,
    SERIES_ACCEPT_SLA,
    accept_form,
    acceptance_list,
    change_list,
    noise_summary,
    sla_list,
)
from dashboard.figures.bisect import add_bisect_marker
from dashboard.figures.metrics import series_figure

dash.register_page(  # type: ignore[no-untyped-call]
    __name__, path="/series", title="Series · perfdash", name="Series", order=21
)

SERIES_GRAPH = "series-graph"
SERIES_GO = "series-go"
SERIES_KEY = "series-key"
SERIES_PANELS = "series-panels"


def _bisect(benchmark: str, metric: str) -> Bisect | None:
    """The newest bisect of this series' spec and metric, if the series is a spec's."""
    name, _, label = benchmark.partition("[")
    try:
        bisects = list_bisects(current_client(), name)["items"]
    except ApiError:  # not a benchmark spec's series
        return None
    label = label.removesuffix("]")
    return next((b for b in bisects if b["metric"] == metric and b["label"] == label), None)


def _bisect_card(bisect: Bisect | None) -> list[Component]:
    if bisect is None:
        return []
    link = dcc.Link("bisect panel", href=f"/benchmarks/{bisect['spec_name']}")
    return [html.Section([html.H2("Bisect"), bisect_summary(bisect), link], className="card")]


def _panels(series: dict[str, Any]) -> list[Component]:
    return [
        html.Section([html.H2("Noise band (A/A runs)"), noise_summary(series)], className="card"),
        html.Section([html.H2("Change points"), change_list(series)], className="card"),
        html.Section([html.H2("SLAs"), sla_list(series)], className="card"),
        html.Section([html.H2("Accepted baselines"), acceptance_list(series)], className="card"),
    ]


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
    key = {"project": project, "benchmark": benchmark, "metric": metric, "branch": branch}
    try:
        series = _fetch(key)
    except ApiError as e:
        return _without_series(notice(f"Could not load the series: {e.detail}", "error"))
    where = f"{project} / {benchmark}" + (f" on {branch}" if branch else "")
    bisect = _bisect(benchmark, metric)
    figure = series_figure(series)
    if bisect is not None:
        add_bisect_marker(figure, dict(series), dict(bisect))
    return html.Div(
        [
            html.H1(metric, className="page-title"),
            html.Div(f"{where} · {len(series['points'])} runs", className="muted"),
            html.Section(
                dcc.Graph(id=SERIES_GRAPH, figure=figure, config={"displaylogo": False}),
                className="card",
            ),
            *_bisect_card(bisect),
            html.Div(_panels(series), id=SERIES_PANELS),
            html.Section([html.H2("Accept a new baseline"), accept_form(series)], className="card"),
            dcc.Store(id=SERIES_KEY, data=key),
            dcc.Location(id=SERIES_GO, refresh=True),
        ]
    )


def _fetch(key: dict[str, Any]) -> dict[str, Any]:
    return get_series(
        current_client(),
        project=key["project"],
        benchmark=key["benchmark"],
        metric=key["metric"],
        branch=key["branch"],
    )


def _without_series(message: Component) -> html.Div:
    stubs = [
        dcc.Graph(id=SERIES_GRAPH),
        html.Div(id=SERIES_PANELS),
        accept_form({"slas": []}),
        dcc.Store(id=SERIES_KEY),
    ]
    return html.Div([message, html.Div(stubs, hidden=True), dcc.Location(id=SERIES_GO)])


@callback(Output(SERIES_GO, "href"), Input(SERIES_GRAPH, "clickData"), prevent_initial_call=True)
def _open_trace(click: dict[str, Any] | None) -> str:
    """A click on a point that has a trace opens that trace."""
    trace_id = ((click or {}).get("points") or [{}])[0].get("customdata")
    if not trace_id:
        raise dash.exceptions.PreventUpdate
    return f"/traces/{trace_id}"


@callback(
    Output(SERIES_ACCEPT_RESULT, "children"),
    Output(SERIES_GRAPH, "figure"),
    Output(SERIES_PANELS, "children"),
    Input(SERIES_ACCEPT_GO, "n_clicks"),
    State(SERIES_ACCEPT_SLA, "value"),
    State(SERIES_ACCEPT_COMMIT, "value"),
    State(SERIES_ACCEPT_REASON, "value"),
    State(SERIES_KEY, "data"),
    prevent_initial_call=True,
)
def _accept(
    _n: int | None, sla_id: str | None, commit: str | None, reason: str | None, key: Any
) -> tuple[Component, Any, Any]:
    """Accept through the API (which checks the caller's right), then redraw the series."""
    unchanged = (dash.no_update, dash.no_update)
    if not sla_id:
        return notice("This series has no SLA with a baseline to accept.", "error"), *unchanged
    if not (reason or "").strip():
        return notice("Say why this level is the new normal.", "error"), *unchanged
    try:
        done = accept_baseline(
            current_client(), sla_id=sla_id, reason=reason or "", commit=commit or None
        )
        series = _fetch(key)
    except ApiError as e:
        return notice(f"Not accepted: {e.detail}", "error"), *unchanged
    text = f"Commit {done['commit']} is the new baseline of {done['sla_name']}."
    return notice(text, "success"), series_figure(series), _panels(series)
