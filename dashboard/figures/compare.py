"""Per-kernel time deltas of a comparison as a diverging bar chart.

Input is the `/compare` JSON's `kernels`, already sorted by absolute impact; green bars
are time saved in B, red bars time added.

Public surface: `kernel_delta_figure`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from dashboard.figures.theme import MONO, base_layout, empty_figure, escape_lines, plotly_text
from dashboard.format import format_duration_ns, shorten_kernel_name

__all__ = ["kernel_delta_figure"]

SAVED, ADDED = "#2b8a3e", "#c92a2a"
TOP_N = 15


def _hover(d: dict[str, Any]) -> str:
    pct = "new" if d.get("delta_pct") is None else f"{d['delta_pct']:+.1f}%"
    return (
        f"<b>{escape_lines(d['name'])}</b><br>"
        f"A: {d['count_a']:,} launches, {format_duration_ns(d['total_ns_a'])}<br>"
        f"B: {d['count_b']:,} launches, {format_duration_ns(d['total_ns_b'])}<br>"
        f"Δ {format_duration_ns(d['delta_ns'])} ({pct})"
    )


def kernel_delta_figure(deltas: Sequence[dict[str, Any]], top_n: int = TOP_N) -> go.Figure:
    """The `top_n` largest changes, biggest at the top, in µs."""
    rows = [d for d in deltas if d["delta_ns"]][:top_n]
    if not rows:
        return empty_figure("No kernel changed its total time")
    fig = go.Figure(
        go.Bar(
            x=[d["delta_ns"] / 1e3 for d in rows],
            y=list(range(len(rows))),
            orientation="h",
            marker={"color": [ADDED if d["delta_ns"] > 0 else SAVED for d in rows]},
            hovertext=[_hover(d) for d in rows],
            hovertemplate="%{hovertext}<extra></extra>",
        )
    )
    base_layout(fig, 90 + 30 * len(rows), top=20)
    fig.update_yaxes(
        tickvals=list(range(len(rows))),
        ticktext=[plotly_text(shorten_kernel_name(d["name"])) for d in rows],
        tickfont={"family": MONO, "size": 12},
        autorange="reversed",
        automargin=True,
    )
    fig.update_xaxes(
        title_text="B minus A, total time per kernel (µs)", ticksuffix=" µs", zeroline=True
    )
    return fig
