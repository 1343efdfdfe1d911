"""`/benchmarks/<name>`: a spec, its runs, a re-run button, scaling curves from sweeps, and
its newest bisect (state, result, measured commits; issue 22).

The scaling chart plots the spec's headline throughput against its first swept
parameter, one line per commit (the run's git ref) and GPU model.
"""

from __future__ import annotations

from typing import Any

import dash
from dash import Input, Output, State, callback, dcc, html
from dash.development.base_component import Component

from dashboard.api.benchmarks import (
    BenchRun,
    BenchSpec,
    get_spec,
    list_bisects,
    list_runs,
    request_run,
)
from dashboard.api.client import ApiError, current_client
from dashboard.components import notice
from dashboard.components.bench_run_notice import run_queued
from dashboard.components.benchmark_tables import kv_table, runs_table
from dashboard.components.bisect_panel import bisect_panel
from dashboard.figures.benchmarks import primary_metric, scaling_figure

# Dash ships no annotations for register_page.
dash.register_page(  # type: ignore[no-untyped-call]
    __name__, path_template="/benchmarks/<name>", title="Benchmark · perfdash", name="Benchmark"
)

BENCH_SPEC_NAME = "bench-spec-name"
BENCH_SPEC_RUN = "bench-spec-run"
BENCH_SPEC_STATUS = "bench-spec-status"
BENCH_SPEC_RUNS = "bench-spec-runs"
BENCH_SPEC_POLL = "bench-spec-poll"
POLL_MS = 2000


def _settle_text(settle: dict[str, float] | None) -> str:
    if settle is None:
        return "no"
    return "yes (" + (", ".join(f"{k} {v:g}" for k, v in settle.items()) or "defaults") + ")"


def _facts(spec: BenchSpec) -> Component:
    what = " ".join(spec["command"]) if spec["kind"] == "command" else spec["workload"]
    pairs = [
        ("Kind", spec["kind"]),
        ("Workload", what),
        ("Params", spec["params"]),
        ("Sweep", spec["sweep"]),
        ("Seed / warm-up / iterations", f"{spec['seed']} / {spec['warmup']} / {spec['iters']}"),
        ("Deterministic algorithms", spec["deterministic"]),
        ("Profiler trace", "yes" if spec["profile"] else "no"),
        ("Settle before timing", _settle_text(spec.get("settle"))),
        ("Queue / time limit", f"{spec['queue']} / {spec['timeout_s']} s"),
        ("Schedule (cron)", spec["schedule"]),
        ("Install at a git ref", spec["install"]),
        ("Spec hash", spec["spec_hash"]),
    ]
    return html.Section([html.H2("Spec"), kv_table(pairs)], className="card")


def _scaling(spec: BenchSpec, runs: list[BenchRun]) -> Component | None:
    done = [r for r in runs if r["status"] == "succeeded" and r["results"]]
    if not spec["sweep"] or not done:
        return None
    metric = primary_metric([dict(p) for p in done[0]["results"]])
    if metric is None:
        return None
    x_key = next(iter(spec["sweep"]))
    figure = scaling_figure([dict(r) for r in runs], x_key, metric)
    return html.Section(
        [html.H2(f"Scaling: {metric} against {x_key}"),
         dcc.Graph(id="bench-spec-scaling", figure=figure, config={"displaylogo": False})],
        className="card",
    )  # fmt: skip


def _bisect(name: str) -> Component | None:
    """The newest bisect, when the spec has one."""
    bisects = list_bisects(current_client(), name)["items"]
    return bisect_panel(bisects[0]) if bisects else None


def _runs(name: str) -> Component:
    try:
        spec, runs = get_spec(current_client(), name), list_runs(current_client(), name)["items"]
        bisect = _bisect(name)
    except ApiError as e:
        return notice(f"Could not load {name}: {e.detail}", "error")
    metric = primary_metric([dict(p) for p in runs[0]["results"]]) if runs else None
    sections: list[Any] = [bisect, _scaling(spec, runs)]
    table = runs_table(runs, metric) if runs else html.Div("No runs yet.", className="empty-state")
    sections.append(html.Section([html.H2("Runs"), table], className="card"))
    return html.Div([s for s in sections if s is not None])


def layout(name: str | None = None, **_query: str) -> html.Div:
    """Fresh on every visit; the runs are re-read every couple of seconds."""
    if not name:
        return _without_spec(notice("No benchmark selected."))
    try:
        spec = get_spec(current_client(), name)
    except ApiError as e:
        return _without_spec(notice(f"Could not load benchmark {name}: {e.detail}", "error"))
    title = html.Div(
        [html.H1(name, className="page-title"),
         html.Button("Run now", id=BENCH_SPEC_RUN, className="button", n_clicks=0)],
        className="title-row",
    )  # fmt: skip
    return html.Div(
        [
            dcc.Link("← All benchmarks", href="/benchmarks", className="back-link"),
            title,
            html.Div(spec["description"], className="muted"),
            dcc.Store(id=BENCH_SPEC_NAME, data=name),
            html.Div(id=BENCH_SPEC_STATUS),
            html.Div(_runs(name), id=BENCH_SPEC_RUNS),
            _facts(spec),
            dcc.Interval(id=BENCH_SPEC_POLL, interval=POLL_MS),
        ]
    )


def _without_spec(message: Component) -> html.Div:
    """A message, plus every ID the callbacks name (hidden, idle), so Dash's layout
    validation finds them on every page of the app."""
    return html.Div(
        [
            message,
            dcc.Store(id=BENCH_SPEC_NAME, data=None),
            html.Div(id=BENCH_SPEC_STATUS),
            html.Div(id=BENCH_SPEC_RUNS),
            html.Button(id=BENCH_SPEC_RUN, hidden=True),
            dcc.Interval(id=BENCH_SPEC_POLL, disabled=True),
        ]
    )


@callback(
    Output(BENCH_SPEC_RUNS, "children"),
    Input(BENCH_SPEC_POLL, "n_intervals"),
    State(BENCH_SPEC_NAME, "data"),
    prevent_initial_call=True,
)
def refresh(_n: int | None, name: str | None) -> Component:
    """Re-read the runs so new ones and status changes show up."""
    if not name:
        raise dash.exceptions.PreventUpdate
    return _runs(name)


@callback(
    Output(BENCH_SPEC_STATUS, "children"),
    Input(BENCH_SPEC_RUN, "n_clicks"),
    State(BENCH_SPEC_NAME, "data"),
    prevent_initial_call=True,
)
def rerun(clicks: int | None, name: str | None) -> Component | list[Component]:
    """Queue a run of this spec, warning as the list page does (no runner serves its queue)."""
    if not clicks or not name:
        raise dash.exceptions.PreventUpdate
    try:
        run = request_run(current_client(), name)
    except ApiError as e:
        return notice(f"Could not queue {name}: {e.detail}", "error")
    return run_queued(name, run)
