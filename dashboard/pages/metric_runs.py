"""`/runs`: recent metric runs with their points and SLA verdicts, newest first.

A metric run is what a push stores per (project, benchmark, run key). The page says
"Metric runs", not "Runs": a benchmark run (the Benchmarks pages) is one execution of a
spec, which pushes metric runs of its own.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import dash
from dash import dcc, html

from dashboard.api.client import ApiError, current_client
from dashboard.api.metrics import list_runs
from dashboard.components import notice
from dashboard.components.sla_tile import ago, fmt_value

dash.register_page(  # type: ignore[no-untyped-call]
    __name__, path="/runs", title="Metric runs · perfdash", name="Metric runs", order=22
)


def _flags(run: dict[str, Any]) -> list[Any]:
    """The run's flags (`environment.flags`): throttled or contended make it suspect."""
    return [
        html.Span(
            f"⚠ {f.get('flag')}" + (f" GPU {f['gpu']}" if f.get("gpu") is not None else ""),
            title=f"{f.get('reason') or ''}: {f.get('detail') or ''}".strip(": "),
            className="run-chip run-chip-flag",
        )
        for f in run.get("flags") or []
    ]


def _verdicts(run: dict[str, Any]) -> list[Any]:
    chips = [
        html.Span(f"{v['name']}: {v['verdict']}", className=f"run-chip run-chip-{v['verdict']}")
        for v in sorted(run["verdicts"], key=lambda v: v["name"])
    ]
    return _flags(run) + (chips or [html.Span("no SLA", className="muted")])


def _metrics(run: dict[str, Any]) -> list[Any]:
    links = []
    for p in run["points"][:6]:
        query = urlencode(
            {"project": run["project"], "benchmark": run["benchmark"], "metric": p["metric"]}
        )
        value = p["p50"] if p["p50"] is not None else p["value"]
        label = f"{p['metric']} {fmt_value(value)}"
        links.append(dcc.Link(label, href=f"/series?{query}", className="run-metric"))
    more = len(run["points"]) - 6
    return links + ([html.Span(f" +{more} more", className="muted")] if more > 0 else [])


def _row(run: dict[str, Any]) -> html.Tr:
    trace = dcc.Link("trace", href=f"/traces/{run['trace_id']}") if run.get("trace_id") else ""
    return html.Tr(
        [
            html.Td(ago(run["timestamp"])),
            html.Td(run["project"]),
            html.Td(run["benchmark"]),
            html.Td(html.Code(run["commit"][:10])),
            html.Td(run["branch"]),
            html.Td(run["environment"].get("gpu_model", "")),
            html.Td(_metrics(run)),
            html.Td(_verdicts(run)),
            html.Td(trace),
        ]
    )


def layout(project: str | None = None, **_query: str) -> html.Div:
    """Fetched on every visit."""
    try:
        runs = list_runs(current_client(), project=project, limit=100)
    except ApiError as e:
        return html.Div(notice(f"Could not load metric runs: {e.detail}", "error"))
    head = ["when", "project", "benchmark", "commit", "branch", "GPU", "metrics", "verdicts", ""]
    table = html.Table(
        [
            html.Thead(html.Tr([html.Th(h) for h in head])),
            html.Tbody([_row(r) for r in runs["items"]]),
        ],
        className="data-table runs-table",
    )
    return html.Div(
        [
            html.H1("Metric runs", className="page-title"),
            html.Div(f"{runs['count']} runs pushed", className="muted"),
            html.Section(
                table if runs["items"] else notice("No runs pushed yet.", "info"), className="card"
            ),
        ]
    )
