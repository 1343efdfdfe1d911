"""Charts of the Nsight Compute sections view: Speed of Light bars, occupancy bars and the
warp stall reasons, from one kernel of the `/ncu` JSON.

Public surface: `sol_figure`, `occupancy_figure`, `stalls_figure`.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from dashboard.figures.theme import ACCENT, base_layout, empty_figure, plotly_text

__all__ = ["occupancy_figure", "sol_figure", "stalls_figure"]

JSON = dict[str, Any]
MAX_STALLS = 15
_GREY = "#adb5bd"


def _empty(message: str) -> go.Figure:
    fig = empty_figure(message)
    fig.update_layout(height=120)
    return fig


def _pct_bars(labels: list[str], values: list[float], colors: list[str], height: int) -> go.Figure:
    fig = go.Figure(
        go.Bar(
            x=values, y=[plotly_text(x) for x in labels], orientation="h", marker_color=colors,
            text=[f"{v:.1f}%" for v in values], textposition="auto", cliponaxis=False,
            hovertemplate="%{y}: %{x:.2f}%<extra></extra>",
        )
    )  # fmt: skip
    base_layout(fig, height)
    fig.update_xaxes(range=[0, 100], ticksuffix="%", title_text="% of peak")
    fig.update_yaxes(autorange="reversed")
    return fig


def sol_figure(kernel: JSON) -> go.Figure:
    """Compute and memory throughputs as % of peak, as ncu's GPU Speed Of Light section."""
    sol = kernel.get("speed_of_light") or []
    if not sol:
        return _empty("No Speed of Light metrics for this kernel.")
    colors = [ACCENT if s["label"].startswith("Compute") else "#e8590c" for s in sol]
    return _pct_bars([s["label"] for s in sol], [s["value"] for s in sol], colors,
                     60 + 32 * len(sol))  # fmt: skip


def occupancy_figure(kernel: JSON) -> go.Figure:
    """Theoretical against achieved occupancy (% of the SM's warp slots)."""
    occ = kernel.get("occupancy") or {}
    pairs = [(label, occ.get(key)) for label, key in
             (("Theoretical", "theoretical_pct"), ("Achieved", "achieved_pct"))]  # fmt: skip
    shown = [(label, float(v)) for label, v in pairs if v is not None]
    if not shown:
        return _empty("No occupancy metrics for this kernel.")
    colors = [_GREY if label == "Theoretical" else ACCENT for label, _ in shown]
    return _pct_bars([x for x, _ in shown], [v for _, v in shown], colors, 60 + 36 * len(shown))


def stalls_figure(kernel: JSON) -> go.Figure:
    """The largest warp stall reasons, in the unit of the metric family found."""
    stalls = (kernel.get("stalls") or [])[:MAX_STALLS]
    if not stalls:
        return _empty("No warp stall metrics for this kernel (collect WarpStateStats).")
    fig = go.Figure(
        go.Bar(
            x=[s["value"] for s in stalls], y=[plotly_text(s["label"]) for s in stalls],
            orientation="h", marker_color="#ae3ec9",
            customdata=[s["metric"] for s in stalls],
            hovertemplate="%{y}: %{x:.3g}<br>%{customdata}<extra></extra>",
        )
    )  # fmt: skip
    base_layout(fig, 60 + 22 * len(stalls))
    fig.update_xaxes(title_text=plotly_text(kernel.get("stall_unit") or ""))
    fig.update_yaxes(autorange="reversed")
    return fig
