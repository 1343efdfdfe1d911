"""The chart of the Compile tab: the top torch.compile phases, inclusive and self time.

Public surface: `phases_figure`.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from dashboard.figures.theme import ACCENT, base_layout, empty_figure, plotly_text

__all__ = ["phases_figure"]

JSON = dict[str, Any]
_SELF = "#e8590c"


def phases_figure(phases: list[JSON]) -> go.Figure:
    """Horizontal bars per phase, largest first: total (inclusive) time and self time, in s."""
    if not phases:
        return empty_figure("No compile phases in this trace.")
    names = [plotly_text(p["name"]) for p in phases]
    fig = go.Figure()
    for label, key, color in (("total (inclusive)", "total_ns", ACCENT),
                              ("self", "self_ns", _SELF)):  # fmt: skip
        fig.add_trace(
            go.Bar(
                x=[p[key] / 1e9 for p in phases], y=names, orientation="h", name=label,
                marker_color=color, customdata=[p["count"] for p in phases],
                hovertemplate=f"%{{y}}<br>{label}: %{{x:.3f}} s in %{{customdata}} ranges"
                "<extra></extra>",
            )
        )  # fmt: skip
    base_layout(fig, 80 + 34 * len(phases))
    fig.update_layout(barmode="group", legend={"orientation": "h", "y": -0.12})
    fig.update_xaxes(title_text="seconds", ticksuffix=" s")
    fig.update_yaxes(autorange="reversed")
    return fig
