"""`/benchmark-runs/<run_id>`: one run's metrics, samples, GPU state and flags,
environment, hash and trace.

While the run is queued or running, the page polls the API and re-renders when it ends.
"""

from __future__ import annotations

from typing import Any

import dash
from dash import Input, Output, State, callback, dcc, html
from dash.development.base_component import Component

from dashboard.api.benchmarks import BenchRun, ResultPoint, get_run
from dashboard.api.client import ApiError, current_client
from dashboard.components import notice, status_badge
from dashboard.components.benchmark_tables import data_attr, kv_table, metrics_table
from dashboard.components.gpu_guard import flag_badges, gpu_state_section
from dashboard.figures.benchmarks import samples_histogram
from dashboard.format import format_timestamp

# Dash ships no annotations for register_page.
dash.register_page(  # type: ignore[no-untyped-call]
    __name__, path_template="/benchmark-runs/<run_id>", title="Benchmark run · perfdash",
    name="Benchmark run",
)  # fmt: skip

BENCH_RUN_ID = "bench-run-id"
BENCH_RUN_POLL = "bench-run-poll"
BENCH_RUN_BODY = "bench-run-body"
POLL_MS = 2000
PENDING = ("queued", "running")
ENV_KEYS = ("gpu_model", "gpu_count", "driver", "cuda", "rocm", "torch", "perfdash", "python",
            "runner", "device", "spec_hash")  # fmt: skip


def _header(run: BenchRun) -> list[Component]:
    title = html.Div(
        [html.H1(f"{run['spec_name']} · run {run['id'][:8]}", className="page-title"),
         status_badge(run["status"])],
        className="title-row",
    )  # fmt: skip
    out: list[Component] = [title]
    badges = flag_badges(run.get("flags") or [])
    if badges is not None:
        out.append(badges)
    if run["status"] == "failed":
        out.append(notice(f"Failed ({run['reason']}): {run['error']}", "error"))
    out += [notice(f"Warning: {w}", "warning") for w in run["warnings"]]
    return out


def _facts(run: BenchRun) -> Component:
    trace: Any = "—"
    if run["trace_id"]:
        trace = dcc.Link("open the profiler trace →", href=f"/traces/{run['trace_id']}",
                         id="bench-run-trace-link")  # fmt: skip
    pairs = [
        ("Trigger", run["trigger"]),
        ("Git ref", run["ref"]),
        ("Runner", run["runner"]),
        ("Attempts", run["attempts"]),
        ("Queued", format_timestamp(run["created_at"])),
        ("Started", format_timestamp(run["started_at"])),
        ("Finished", format_timestamp(run["finished_at"])),
    ]
    hash_box = html.Div(
        [html.Div("Determinism hash (sha256 of outputs, loss and parameters)", className="muted"),
         html.Div(run["determinism_hash"] or "—", className="hash", id="bench-run-hash")],
    )  # fmt: skip
    return html.Section(
        [html.H2("Run"), html.Div([kv_table(pairs), html.Div([hash_box, html.P(trace)])],
                                  className="bench-grid")],
        className="card",
    )  # fmt: skip


def _point(point: ResultPoint, name: str) -> Component:
    sampled = [m for m in point.get("metrics", []) if m.get("samples")]
    charts = [
        dcc.Graph(
            figure=samples_histogram(m["samples"], m["metric"], m.get("unit", "")),
            config={"displaylogo": False, "responsive": True},
        )
        for m in sampled
    ]
    counts = point.get("counts") or {}
    extra = ", ".join(f"{k} {v:.4g}" for k, v in counts.items() if v)
    return html.Section(
        [
            html.H3(point.get("label") or name, className="point-title"),
            html.Div(f"per iteration: {extra}" if extra else "", className="muted small"),
            html.Div([metrics_table(point.get("metrics", [])), html.Div(charts)],
                     className="bench-grid"),
        ],
        className="card",
        **data_attr("point", point.get("label") or name),
    )  # fmt: skip


def _environment(run: BenchRun) -> Component:
    env = run["environment"]
    return html.Section(
        [
            html.H2("Environment"),
            html.Div(kv_table([(k, env.get(k)) for k in ENV_KEYS]), className="bench-grid"),
        ],
        className="card",
    )  # fmt: skip


def _body(run_id: str) -> tuple[list[Component], bool]:
    """What to show now, and whether the run has settled (so polling can stop)."""
    try:
        run = get_run(current_client(), run_id)
    except ApiError as e:
        if e.status == 404:
            return [notice(f"There is no benchmark run {run_id}.", "error")], True
        return [notice(f"Could not load the run: {e.detail}", "error")], False
    back = dcc.Link(f"← {run['spec_name']}", href=f"/benchmarks/{run['spec_name']}",
                    className="back-link")  # fmt: skip
    body: list[Component] = [back, *_header(run)]
    if run["status"] in PENDING:
        text = f"This run is {run['status']}; the page updates by itself when it ends."
        return [*body, notice(text, "info")], False
    body.append(_facts(run))
    body += [_point(p, run["spec_name"]) for p in run["results"]]
    env = run["environment"]
    if (
        env.get("gpu_state")
        or env.get("settle")
        or run.get("flags")
        or env.get("device", "").startswith("cuda")
    ):
        body.append(gpu_state_section(run.get("flags") or [], env))
    if env:
        body.append(_environment(run))
    return body, True


def layout(run_id: str | None = None, **_query: str) -> html.Div:
    """Fresh on every visit; Dash also calls it with no id to learn the page's IDs."""
    body, settled = _body(run_id) if run_id else ([notice("No run selected.")], True)
    return html.Div(
        [
            dcc.Store(id=BENCH_RUN_ID, data=run_id),
            dcc.Interval(id=BENCH_RUN_POLL, interval=POLL_MS, disabled=settled),
            html.Div(body, id=BENCH_RUN_BODY),
        ]
    )


@callback(
    Output(BENCH_RUN_BODY, "children"),
    Output(BENCH_RUN_POLL, "disabled"),
    Input(BENCH_RUN_POLL, "n_intervals"),
    State(BENCH_RUN_ID, "data"),
    prevent_initial_call=True,
)
def poll(_n: int | None, run_id: str | None) -> tuple[list[Component], bool]:
    """Re-read a pending run; stop polling once it has succeeded or failed."""
    if not run_id:
        raise dash.exceptions.PreventUpdate
    return _body(run_id)
