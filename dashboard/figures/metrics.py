"""The series chart: p50 over runs with a p05-p95 band, thresholds, change points (a
change for the worse is labelled as the first bad commit) and accepted baselines.

Public surface: `series_figure`.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from dashboard.figures.theme import ACCENT, base_layout, empty_figure, escape_lines, plotly_text

BAND = "rgba(59, 91, 219, 0.15)"
THRESHOLD = "#e03131"
CHANGE = "#f08c00"
WORSE = "#c92a2a"
ACCEPTED = "#2b8a3e"


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
    _change_points(fig, series["change_points"])
    _acceptances(fig, points, series.get("acceptances") or [])
    unit = f" ({series['unit']})" if series["unit"] else ""
    base_layout(fig, 420, top=30)
    fig.update_layout(yaxis_title=series["metric"] + unit, legend={"orientation": "h", "y": -0.3})
    fig.update_xaxes(tickvals=x, ticktext=ticks, tickangle=-45, nticks=20, title="commit")
    return fig


def _change_points(fig: go.Figure, change_points: list[dict[str, Any]]) -> None:
    for cp in change_points:
        color = WORSE if cp.get("worse") else CHANGE
        label = "first bad commit " if cp.get("worse") else ""
        fig.add_vline(x=cp["index"] - 0.5, line={"color": color, "width": 2})
        fig.add_annotation(
            x=cp["index"] - 0.5,
            y=1,
            yref="paper",
            showarrow=False,
            yanchor="bottom",
            text=plotly_text(
                f"{cp['shift_pct']:+.1f}% at {label}{cp['commit'][:8]} (p={cp['p_value']:.3f})"
            ),
            font={"color": color},
        )


def _acceptances(
    fig: go.Figure, points: list[dict[str, Any]], acceptances: list[dict[str, Any]]
) -> None:
    """A dashed line where a baseline was accepted, naming the SLA and who accepted it."""
    index = {p["run"]: i for i, p in enumerate(points)}
    for n, a in enumerate(acceptances):
        i = index.get(a["run_id"])
        if i is None:
            continue
        fig.add_vline(x=i - 0.5, line={"color": ACCEPTED, "width": 2, "dash": "dash"})
        fig.add_annotation(
            x=i - 0.5,
            y=0.02 + 0.08 * n,
            yref="paper",
            xanchor="left",
            showarrow=False,
            text=plotly_text(
                f"baseline of {a['sla_name']} accepted by {a['accepted_by']} "
                f"{str(a['accepted_at'])[:16].replace('T', ' ')}"
            ),
            hovertext=escape_lines(a["reason"]),
            font={"color": ACCEPTED},
        )
