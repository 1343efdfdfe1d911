"""Operator-view figures: CPU time by Python stack or by module, as an icicle.

Public surface: `stack_icicle_figure`.
"""

from __future__ import annotations

import plotly.graph_objects as go

from dashboard.api.operators import StackTree
from dashboard.figures.theme import base_layout, empty_figure, escape_lines, plotly_text
from dashboard.format import format_count, format_duration_ns

__all__ = ["stack_icicle_figure"]

LABEL_CHARS = 60


def _label(name: str) -> str:
    short = name if len(name) <= LABEL_CHARS else name[: LABEL_CHARS - 1] + "…"
    return plotly_text(short)


def stack_icicle_figure(tree: StackTree, height: int = 460) -> go.Figure:
    """Frames as nested boxes, width proportional to total CPU time; roots at the top.

    Values are totals (`branchvalues="total"`): a frame's children never add up to more
    than the frame, since they ran inside it."""
    nodes = tree["nodes"]
    if not nodes:
        return empty_figure(tree.get("reason") or "No frames recorded")
    hover = [
        f"<b>{escape_lines(n['name'])}</b><br>total: {format_duration_ns(n['total_ns'])}<br>"
        f"self: {format_duration_ns(n['self_ns'])}<br>calls: {format_count(n['count'])}"
        for n in nodes
    ]
    fig = go.Figure(
        go.Icicle(
            ids=[n["id"] for n in nodes],
            parents=[n["parent"] for n in nodes],
            labels=[_label(n["name"]) for n in nodes],
            values=[n["total_ns"] for n in nodes],
            branchvalues="total",
            hovertext=hover,
            hoverinfo="text",
            tiling={"orientation": "v"},
            root={"color": "#f8f9fa"},
            maxdepth=8,
        )
    )
    base_layout(fig, height)
    fig.update_layout(margin={"l": 0, "r": 0, "t": 10, "b": 0})
    return fig
