"""`/slas`: the SLA board, every SLA a tile (green pass, red fail, grey no data), for a wall.

Grouped by project and benchmark; filters by project, branch and GPU; refreshed every
30 s with `dcc.Interval`, so it can stay open on a screen.
"""

from __future__ import annotations

from functools import cache
from itertools import groupby
from pathlib import Path
from typing import Any

import dash
from dash import Input, Output, callback, dcc, html

from dashboard.api.client import ApiError, current_client
from dashboard.api.metrics import get_board, get_facets
from dashboard.components import notice
from dashboard.components.getting_started import SLA_START, getting_started
from dashboard.components.sla_tile import board_document

dash.register_page(  # type: ignore[no-untyped-call]
    __name__, path="/slas", title="SLA board · perfdash", name="SLAs", order=20
)

SLAS_PROJECT = "slas-project"
SLAS_BRANCH = "slas-branch"
SLAS_GPU = "slas-gpu"
SLAS_BOARD = "slas-board"
SLAS_POLL = "slas-poll"
SLAS_FRAME = "slas-frame"
CSS_PATH = Path(__file__).resolve().parents[1] / "assets" / "metrics.css"
REFRESH_MS = 30_000


def _dropdown(element_id: str, label: str, options: list[str], value: str | None) -> html.Label:
    return html.Label(
        [
            label,
            dcc.Dropdown(
                id=element_id,
                options=options,
                value=value,
                placeholder="all",
                clearable=True,
                className="slas-filter",
            ),
        ],
        className="slas-filter-label",
    )


def _summary(slas: list[dict[str, Any]]) -> html.Div:
    counts = {
        k: sum(1 for s in slas if (s.get("status") or "no_data") == k)
        for k in ("fail", "pass", "insufficient_data", "no_data")
    }
    return html.Div(
        [
            html.Span(f"{n} {k.replace('_', ' ')}", className=f"slas-count slas-count-{k}")
            for k, n in counts.items()
        ],
        className="slas-summary",
        id="slas-summary",
    )


@cache
def _board_css() -> str:
    """The board's stylesheet, inlined into the iframe document (read on first use)."""
    return CSS_PATH.read_text()


def render_board(slas: list[dict[str, Any]]) -> list[Any]:
    """The counts, then the tiles grouped by project and benchmark in one iframe."""
    if not slas:
        return [getting_started(SLA_START, "slas-empty")]
    groups = [
        (project, [(b, list(tiles)) for b, tiles in groupby(rows, key=lambda s: s["benchmark"])])
        for project, rows in groupby(slas, key=lambda s: s["project"])
    ]
    doc = board_document(groups, _board_css())
    return [_summary(slas), html.Iframe(id=SLAS_FRAME, srcDoc=doc, className="slas-frame")]


def layout(
    project: str | None = None, branch: str | None = None, gpu: str | None = None, **_query: str
) -> html.Div:
    """Filters from what the API has seen; the board itself is filled by the callback."""
    try:
        facets = get_facets(current_client())
    except ApiError:
        facets = {"projects": [], "branches": [], "gpus": []}
    return html.Div(
        [
            html.Div(
                [
                    html.H1("SLA board", className="page-title"),
                    _dropdown(SLAS_PROJECT, "Project", facets["projects"], project),
                    _dropdown(SLAS_BRANCH, "Branch", facets["branches"], branch),
                    _dropdown(SLAS_GPU, "GPU", facets["gpus"], gpu),
                ],
                className="slas-toolbar",
            ),
            html.Div(id=SLAS_BOARD, className="slas-board"),
            dcc.Interval(id=SLAS_POLL, interval=REFRESH_MS),
        ],
        className="slas-page",
    )


@callback(
    Output(SLAS_BOARD, "children"),
    Input(SLAS_PROJECT, "value"),
    Input(SLAS_BRANCH, "value"),
    Input(SLAS_GPU, "value"),
    Input(SLAS_POLL, "n_intervals"),
)
def _refresh(project: str | None, branch: str | None, gpu: str | None, _n: int | None) -> Any:
    try:
        slas = get_board(current_client(), project=project, branch=branch, gpu=gpu)
    except ApiError as e:
        return notice(f"Could not load the SLA board: {e.detail}", "error")
    return render_board(slas)
