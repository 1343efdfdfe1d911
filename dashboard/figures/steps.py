"""Stacked bars of GPU time per step (and rank), and per rank, from the `/steps/breakdown`
and `/ranks` JSON.

Each bar is one window split exclusively (compute, communication, memcpy, memset, idle), in
ms, the categories in the colours every page uses. The slowest step's bars get a red outline
and a label, so it is found without reading the table.

Public surface: `step_figure`, `rank_figure`, `unit_label`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from dashboard.figures.overview import CATEGORIES
from dashboard.figures.theme import CATEGORY_COLORS, base_layout, empty_figure
from dashboard.format import format_duration_ns

__all__ = ["rank_figure", "step_figure", "unit_label"]

JSON = dict[str, Any]
SLOWEST = "#e03131"


def unit_label(row: JSON) -> str:
    """`rank 1` (a rank's row), `rank 1 · GPU 1` (a step row, one per device), or `GPU 0`
    where the trace has no ranks."""
    if row.get("rank") is not None:
        gpu = f" · GPU {row['device']}" if row.get("device") is not None else ""
        return f"rank {row['rank']}{gpu}"
    devices = row.get("devices") or ([row["device"]] if row.get("device") is not None else [])
    return ", ".join(f"GPU {d}" for d in devices) or "GPU"


def _stack(fig: go.Figure, rows: Sequence[JSON], x: Any, outline: list[float]) -> None:
    for key, field, title in CATEGORIES:
        ns = [int(r[field]) for r in rows]
        fig.add_trace(
            go.Bar(
                name=title, x=x, y=[n / 1e6 for n in ns],
                marker={"color": CATEGORY_COLORS[key],
                        "line": {"color": SLOWEST, "width": outline}},
                customdata=[[format_duration_ns(n)] for n in ns],
                hovertemplate=f"{title}: %{{customdata[0]}}<extra></extra>",
            )
        )  # fmt: skip


def step_figure(rows: Sequence[JSON]) -> go.Figure:
    """One stacked bar per step, or per step and rank (grouped under the step) when the
    trace has several ranks or devices."""
    if not rows:
        return empty_figure("No steps: the trace has no step annotations.")
    units = {unit_label(r) for r in rows}
    steps = [f"step {r['step']}" + (" (slowest)" if r["slowest"] else "") for r in rows]
    x: Any = [steps, [unit_label(r) for r in rows]] if len(units) > 1 else steps
    fig = go.Figure()
    _stack(fig, rows, x, [2.5 if r["slowest"] else 0 for r in rows])
    base_layout(fig, 360, top=40)
    fig.update_layout(
        barmode="stack", bargap=0.25,
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0, "traceorder": "normal"},
    )  # fmt: skip
    fig.update_yaxes(title_text="ms of the step's window", rangemode="tozero")
    return fig


def rank_figure(rows: Sequence[JSON]) -> go.Figure:
    """One stacked bar per rank over its GPU span."""
    if not rows:
        return empty_figure("No GPU activity in this trace.")
    fig = go.Figure()
    _stack(fig, rows, [unit_label(r) for r in rows], [0] * len(rows))
    base_layout(fig, 320, top=40)
    fig.update_layout(
        barmode="stack", bargap=0.35,
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0, "traceorder": "normal"},
    )  # fmt: skip
    fig.update_yaxes(title_text="ms of the rank's GPU span", rangemode="tozero")
    return fig
