"""`/benchmarks`: the specs, their last runs with live status, a re-run button, and runners.

A click queues a run through the API (`POST /benchmarks/{name}/runs`); the table is
re-read every couple of seconds, so the badge moves queued -> running -> succeeded as
the GPU worker goes. No work runs in the dashboard process.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import dash
from dash import ALL, Input, Output, callback, ctx, dcc, html

from dashboard.api.benchmarks import (
    BenchSpec,
    Runner,
    list_queued_runs,
    list_runners,
    list_specs,
    request_run,
)
from dashboard.api.client import ApiError, current_client
from dashboard.components import notice
from dashboard.components.bench_run_notice import run_queued
from dashboard.components.benchmark_tables import data_attr, queued_table, waited
from dashboard.components.getting_started import BENCHMARK_START, getting_started
from dashboard.components.status_badge import status_badge
from dashboard.format import format_timestamp

# Dash ships no annotations for register_page.
dash.register_page(  # type: ignore[no-untyped-call]
    __name__, path="/benchmarks", title="Benchmarks · perfdash", name="Benchmarks", order=30
)

BENCHMARKS_TABLE = "benchmarks-table"
BENCHMARKS_RUNNERS = "benchmarks-runners"
BENCHMARKS_QUEUED = "benchmarks-queued"
BENCHMARKS_POLL = "benchmarks-poll"
BENCHMARKS_STATUS = "benchmarks-status"
BENCHMARKS_RUN = "benchmarks-run"  # pattern-matching: {"type": ..., "name": spec name}
POLL_MS = 2000
SPEC_COLUMNS = ("Benchmark", "Workload", "Queue", "Schedule", "Last run", "")
RUNNER_COLUMNS = ("Runner", "GPUs", "Driver", "CUDA / torch", "Queues", "Last seen")


def _workload(spec: BenchSpec) -> str:
    if spec["kind"] == "command":
        return "command: " + " ".join(spec["command"])[:60]
    sweep = " x ".join(f"{k} {v}" for k, v in spec["sweep"].items())
    return f"{spec['workload']}" + (f" · sweep {sweep}" if sweep else "")


def _last_run(spec: BenchSpec) -> html.Td:
    run = spec["last_run"]
    if run is None:
        return html.Td("never run", className="muted")
    when = format_timestamp(run["finished_at"] or run["created_at"])
    if run["status"] == "queued":
        when = f"queued for {waited(run['created_at'], datetime.now(UTC))}"
    return html.Td(
        [
            dcc.Link(status_badge(run["status"]), href=f"/benchmark-runs/{run['id']}"),
            html.Div(when, className="muted small"),
        ]
    )


def _spec_row(spec: BenchSpec) -> html.Tr:
    button = html.Button(
        "Run now",
        id={"type": BENCHMARKS_RUN, "name": spec["name"]},
        className="button",
        n_clicks=0,
    )
    return html.Tr(
        [
            html.Td(
                [
                    dcc.Link(spec["name"], href=f"/benchmarks/{spec['name']}", className="bold"),
                    html.Div(spec["description"] or spec["project"], className="muted small"),
                ]
            ),
            html.Td(_workload(spec), className="small"),
            html.Td(spec["queue"]),
            html.Td(spec["schedule"] or "—", className="mono small"),
            _last_run(spec),
            html.Td(button),
        ],
        **data_attr("spec", spec["name"]),
    )


def _table(head: tuple[str, ...], rows: list[html.Tr]) -> html.Div:
    header = html.Thead(html.Tr([html.Th(c) for c in head]))
    return html.Div(html.Table([header, html.Tbody(rows)], className="data-table"),
                    className="table-wrap")  # fmt: skip


def _specs() -> html.Div:
    try:
        specs = list_specs(current_client())["items"]
    except ApiError as e:
        return notice(f"Could not load benchmarks: {e.detail}", "error")
    if not specs:
        return getting_started(BENCHMARK_START, "benchmarks-empty")
    return _table(SPEC_COLUMNS, [_spec_row(s) for s in specs])


def _runner_row(runner: Runner) -> html.Tr:
    caps = runner["capabilities"]
    gpus = caps.get("gpus") or []
    names = ", ".join(sorted({g.get("name", "?") for g in gpus})) or "none"
    return html.Tr(
        [
            html.Td([runner["name"], " ", status_badge("live" if runner["live"] else "offline")]),
            html.Td(f"{len(gpus)} x {names}" if gpus else "none"),
            html.Td(caps.get("driver") or "—"),
            html.Td(f"{caps.get('cuda') or caps.get('rocm') or '—'} / {caps.get('torch') or '—'}"),
            html.Td(", ".join(runner["queues"])),
            html.Td(format_timestamp(runner["last_seen_at"]), className="muted small"),
        ]
    )


def _runners() -> html.Div:
    try:
        runners = list_runners(current_client())["items"]
    except ApiError as e:
        return notice(f"Could not load runners: {e.detail}", "error")
    if not runners:
        return html.Div(["No runner has registered: start ",
                         html.Code("perfdash worker --queues gpu"), " on a GPU host."],
                        className="empty-state")  # fmt: skip
    return _table(RUNNER_COLUMNS, [_runner_row(r) for r in runners])


def _queued() -> html.Div:
    try:
        runs = list_queued_runs(current_client())["items"]
    except ApiError as e:
        return notice(f"Could not load queued runs: {e.detail}", "error")
    if not runs:
        return html.Div("No run is waiting for a runner.", className="empty-state")
    return queued_table(runs, datetime.now(UTC))


def layout(**_query: str) -> html.Div:
    """Fresh on every visit, then polled."""
    return html.Div(
        [
            html.H1("Benchmarks", className="page-title"),
            html.Div(id=BENCHMARKS_STATUS),
            html.Section([html.H2("Specs"), html.Div(_specs(), id=BENCHMARKS_TABLE)],
                         className="card"),
            html.Section([html.H2("Queued runs"), html.Div(_queued(), id=BENCHMARKS_QUEUED)],
                         className="card"),
            html.Section([html.H2("Runners"), html.Div(_runners(), id=BENCHMARKS_RUNNERS)],
                         className="card"),
            dcc.Interval(id=BENCHMARKS_POLL, interval=POLL_MS),
        ]
    )  # fmt: skip


@callback(
    Output(BENCHMARKS_TABLE, "children"),
    Output(BENCHMARKS_QUEUED, "children"),
    Output(BENCHMARKS_RUNNERS, "children"),
    Input(BENCHMARKS_POLL, "n_intervals"),
    prevent_initial_call=True,
)
def refresh(_n: int | None) -> tuple[html.Div, html.Div, html.Div]:
    """Re-read specs, queued runs and runners so statuses and waits update live."""
    return _specs(), _queued(), _runners()


@callback(
    Output(BENCHMARKS_STATUS, "children"),
    Input({"type": BENCHMARKS_RUN, "name": ALL}, "n_clicks"),
    prevent_initial_call=True,
)
def rerun(clicks: list[int | None]) -> Any:
    """Queue a run of the clicked spec; a re-render of the table is not a click."""
    trigger = ctx.triggered_id
    if not isinstance(trigger, dict) or not any(clicks) or not ctx.triggered[0]["value"]:
        raise dash.exceptions.PreventUpdate
    name = str(trigger["name"])
    try:
        run = request_run(current_client(), name)
    except ApiError as e:
        return notice(f"Could not queue {name}: {e.detail}", "error")
    return run_queued(name, run)
