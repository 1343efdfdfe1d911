"""The bisect panel of a benchmark page: state, result, trace diff, and the table of
measured commits (verdict, median, runs).

A pure builder (API dicts in, Dash components out). Public surface: `bisect_panel`,
`bisect_summary`.
"""

from __future__ import annotations

from typing import Any

from dash import dcc, html

from dashboard.api.benchmarks import Bisect
from dashboard.components.benchmark_tables import data_attr
from dashboard.components.status_badge import status_badge
from dashboard.figures.bisect import bisect_figure
from dashboard.format import format_timestamp


def _short(ref: str | None) -> str:
    return (ref or "—")[:12]


def bisect_summary(bisect: Bisect) -> html.Div:
    """One line: status, result (or why it stopped), runs used of the budget, runner."""
    if bisect["status"] == "found":
        result: Any = [
            "bisected to ",
            html.Span(_short(bisect["first_bad"]), className="mono bold"),
            " (last good ",
            html.Span(_short(bisect["last_good"]), className="mono"),
            ")",
        ]
    else:
        result = bisect["error"] or f"{_short(bisect['good'])} .. {_short(bisect['bad'])}"
    diff = bisect["trace_diff"]
    parts: list[Any] = [
        status_badge(bisect["status"]),
        html.Span(result, className="bisect-result"),
        html.Span(
            f"{bisect['runs_used']} / {bisect['budget']} runs · {bisect['metric']}"
            f" · commits from {bisect['commits_source'] or '…'} · runner {bisect['runner']}",
            className="muted small",
        ),
    ]
    if diff:
        parts.append(dcc.Link("trace diff (last good vs first bad)", href=diff))
    return html.Div(parts, className="bisect-summary")


def _steps_table(bisect: Bisect) -> html.Div:
    head = html.Thead(
        html.Tr([html.Th(h) for h in ("#", "Commit", "Role", "Verdict", "Median", "n", "Runs")])
    )
    rows = []
    for s in bisect["steps"]:
        runs = [dcc.Link(r[:8], href=f"/benchmark-runs/{r}", className="mono") for r in s["runs"]]
        rows.append(
            html.Tr(
                [
                    html.Td(str(s["position"]), className="num"),
                    html.Td(_short(s["ref"]), className="mono", title=s["ref"]),
                    html.Td(s["role"]),
                    html.Td(status_badge(s["verdict"]) if s["verdict"] else "…"),
                    html.Td("—" if s["median"] is None else f"{s['median']:.4g}", className="num"),
                    html.Td(str(s["n"]), className="num"),
                    html.Td([x for r in runs for x in (r, " ")]),
                ],
                **data_attr("ref", s["ref"]),
            )
        )
    table = html.Table([head, html.Tbody(rows)], className="data-table bisect-steps")
    return html.Div(table, className="table-wrap")


def bisect_panel(bisect: Bisect) -> html.Section:
    """The newest bisect of a spec, with its chart and steps."""
    started = format_timestamp(bisect["created_at"])
    title = f"Bisect of {bisect['benchmark']} ({bisect['trigger']}, {started})"
    return html.Section(
        [
            html.H2(title),
            bisect_summary(bisect),
            dcc.Graph(figure=bisect_figure(dict(bisect)), config={"displaylogo": False}),
            _steps_table(bisect),
        ],
        className="card bisect-panel",
        **data_attr("status", bisect["status"]),
    )
