"""Kernel stats to figures: where a trace's GPU time went.

Public surface: `kernel_top_figure`.
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from dashboard.api.traces import KernelStat
from dashboard.figures.theme import (
    ACCENT,
    MONO,
    TEMPLATE,
    base_layout,
    empty_figure,
    escape_lines,
    plotly_text,
)
from dashboard.format import (
    duration_unit,
    format_count,
    format_duration_ns,
    format_pct,
    shorten_kernel_name,
)

__all__ = ["TEMPLATE", "empty_figure", "kernel_top_figure"]

TOP_N = 10
BAR_COLOR = ACCENT


def _hover(k: KernelStat) -> str:
    return (
        f"<b>{escape_lines(k['name'])}</b><br>"
        f"count: {format_count(k['count'])}<br>"
        f"total: {format_duration_ns(k['total_ns'])} ({format_pct(k['pct'])} of kernel time)<br>"
        f"mean: {format_duration_ns(k['mean_ns'])}  "
        f"min: {format_duration_ns(k['min_ns'])}  max: {format_duration_ns(k['max_ns'])}"
    )


def kernel_top_figure(items: Sequence[KernelStat], top_n: int = TOP_N) -> go.Figure:
    """Horizontal bars of the kernels with the most total GPU time, largest at the top.

    Bars sit at numeric positions with the shortened names as tick text, so two kernels
    whose short names coincide still get a bar each; the full name is in the hover.
    """
    top = sorted(items, key=lambda k: k["total_ns"], reverse=True)[:top_n]
    if not top:
        return empty_figure("No kernels recorded in this trace")
    unit, scale = duration_unit(top[0]["total_ns"])
    fig = go.Figure(
        go.Bar(
            x=[k["total_ns"] / scale for k in top],
            y=list(range(len(top))),
            orientation="h",
            marker={"color": BAR_COLOR},
            text=[f"{format_duration_ns(k['total_ns'])} · {format_pct(k['pct'])}" for k in top],
            textposition="outside",
            cliponaxis=False,
            hovertext=[_hover(k) for k in top],
            hovertemplate="%{hovertext}<extra></extra>",
        )
    )
    # The top margin leaves room for the mode bar, which would otherwise cover the top label.
    base_layout(fig, 96 + 34 * len(top), top=36)
    fig.update_layout(bargap=0.3)
    fig.update_yaxes(
        tickvals=list(range(len(top))),
        ticktext=[plotly_text(shorten_kernel_name(k["name"])) for k in top],
        tickfont={"family": MONO, "size": 12},
        autorange="reversed",
        automargin=True,
        showgrid=False,
    )
    fig.update_xaxes(
        title_text="total GPU time per kernel",
        range=[0, top[0]["total_ns"] / scale * 1.22],
        ticksuffix=f" {unit}",
        zeroline=False,
    )
    return fig
