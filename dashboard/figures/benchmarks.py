"""Benchmark charts: per-iteration samples as a histogram, and scaling curves from sweeps.

Pure: API data in, `go.Figure` out. Public surface: `samples_histogram`,
`scaling_figure`, `scaling_lines`, `primary_metric`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from dashboard.figures.theme import ACCENT, base_layout, empty_figure

# The throughput a sweep is judged by, in order of preference.
PRIMARY = ("tokens_per_s", "tflops", "fwd_bwd_tflops", "bandwidth_gbps", "busbw_gbps")


def samples_histogram(samples: Sequence[float], metric: str, unit: str) -> go.Figure:
    """Distribution of per-iteration times, with the median marked."""
    if not samples:
        return empty_figure("No samples were recorded.")
    ordered = sorted(samples)
    median = ordered[len(ordered) // 2]
    fig = go.Figure(
        go.Histogram(x=list(samples), marker_color=ACCENT, nbinsx=min(40, max(5, len(samples))))
    )
    fig.add_vline(x=median, line_dash="dash", line_color="#c92a2a")
    fig.add_annotation(x=median, y=1, yref="paper", text=f"p50 {median:.4g} {unit}",
                       showarrow=False, yanchor="bottom", font={"color": "#c92a2a"})  # fmt: skip
    base_layout(fig, height=260, top=24)
    fig.update_layout(bargap=0.05, showlegend=False)
    fig.update_xaxes(title_text=f"{metric} ({unit})")
    fig.update_yaxes(title_text="iterations")
    return fig


def primary_metric(points: Sequence[dict[str, Any]]) -> str | None:
    """The first throughput metric that every point reports."""
    for name in PRIMARY:
        if points and all(any(m["metric"] == name for m in p["metrics"]) for p in points):
            return name
    return None


def scaling_lines(
    runs: Sequence[dict[str, Any]], x_key: str, metric: str
) -> dict[str, list[tuple[Any, float]]]:
    """One line per commit (the run's ref) and GPU model: the newest run of each group."""
    lines: dict[str, list[tuple[Any, float]]] = {}
    for run in runs:  # newest first, so the first run of a group wins
        env = run.get("environment") or {}
        group = f"{run.get('ref') or 'no ref'} · {env.get('gpu_model') or env.get('device')}"
        if group in lines or run.get("status") != "succeeded":
            continue
        pts = []
        for point in run.get("results") or []:
            value = next((m.get("value") for m in point["metrics"] if m["metric"] == metric), None)
            if x_key in point.get("params", {}) and value is not None:
                pts.append((point["params"][x_key], float(value)))
        if pts:
            lines[group] = sorted(pts)
    return lines


def scaling_figure(runs: Sequence[dict[str, Any]], x_key: str, metric: str) -> go.Figure:
    """Throughput against a swept parameter, one line per commit or environment."""
    lines = scaling_lines(runs, x_key, metric)
    if not lines:
        return empty_figure("No finished sweep to draw yet.")
    fig = go.Figure()
    hover = f"{x_key}=%{{x}}<br>{metric}=%{{y:.4g}}<extra></extra>"
    for name, pts in lines.items():
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines+markers", name=name, hovertemplate=hover))
    base_layout(fig, height=320, top=30)
    xs = sorted({p[0] for pts in lines.values() for p in pts}, key=str)
    if all(isinstance(x, int | float) for x in xs):
        # Sweeps are usually powers of two: a log axis with a tick at each swept value.
        xs = sorted(xs)
        text = [f"{x:,}" if isinstance(x, int) else f"{x:g}" for x in xs]
        fig.update_xaxes(type="log", tickvals=xs, ticktext=text)
    else:
        fig.update_xaxes(type="category")
    fig.update_xaxes(title_text=x_key)
    fig.update_yaxes(title_text=metric, rangemode="tozero")
    fig.update_layout(legend={"orientation": "h", "y": 1.12})
    return fig
