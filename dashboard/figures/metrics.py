"""The series chart: p50 over runs with a p05-p95 band, thresholds and change points.

Public surface: `series_figure`.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from dashboard.figures.theme import ACCENT, base_layout, empty_figure, escape_lines

BAND = "rgba(59, 91, 219, 0.15)"
THRESHOLD = "#e03131"
CHANGE = "#f08c00"


def _hover(p: dict[str, Any]) -> str:
    trace = f"<br>trace {p['trace_id']} (click to open)" if p.get("trace_id") else ""
    return escape_lines(f"commit {p['commit']} on {p['branch']}") + f"<br>{p['timestamp']}{trace}"


def series_figure(series: dict[str, Any]) -> go.Figure:
    """The history of one series; `customdata` carries each point's trace id for clicks."""
    points = series["points"]
    if not points:
        return empty_figure("No points for this series yet")
    x = list(range(len(points)))
    ticks = [p["commit"][:8] for p in points]
    fig = go.Figure()
    if any(p["p95"] is not None and p["p05"] != p["p95"] for p in points):
        fig.add_scatter(
            x=x,
            y=[p["p95"] for p in points],
            mode="lines",
            line_width=0,
            hoverinfo="skip",
            showlegend=False,
        )
        fig.add_scatter(
            x=x,
            y=[p["p05"] for p in points],
            mode="lines",
            line_width=0,
            fill="tonexty",
            fillcolor=BAND,
            name="p05-p95",
            hoverinfo="skip",
        )
    fig.add_scatter(
        x=x,
        y=[p["value"] for p in points],
        mode="lines+markers",
        name="p50",
        line={"color": ACCENT, "width": 2},
        marker={"size": 7},
        text=[_hover(p) for p in points],
        customdata=[p.get("trace_id") for p in points],
        hovertemplate="%{y:.4g}<br>%{text}<extra></extra>",
    )
    for threshold in series["thresholds"]:
        fig.add_hline(
            y=threshold,
            line={"color": THRESHOLD, "dash": "dash"},
            annotation_text=f"SLA {threshold:g}",
            annotation_position="top left",
        )
    for cp in series["change_points"]:
        fig.add_vline(x=cp["index"] - 0.5, line={"color": CHANGE, "width": 2})
        fig.add_annotation(
            x=cp["index"] - 0.5,
            y=1,
            yref="paper",
            showarrow=False,
            yanchor="bottom",
            text=f"{cp['shift_pct']:+.1f}% at {cp['commit'][:8]} (p={cp['p_value']:.3f})",
            font={"color": CHANGE},
        )
    unit = f" ({series['unit']})" if series["unit"] else ""
    base_layout(fig, 420, top=30)
    fig.update_layout(yaxis_title=series["metric"] + unit, legend={"orientation": "h", "y": -0.3})
    fig.update_xaxes(tickvals=x, ticktext=ticks, tickangle=-45, nticks=20, title="commit")
    return fig
