"""What one GPU did through a benchmark run's timed loops: SM clock, power, temperature.

Pure: one GPU of a run's `environment.gpu_state` in, a `go.Figure` out. Three stacked
panels on one time axis, with the max (or locked) SM clock, the enforced power limit and
the slowdown temperature as dashed lines; samples taken under a slowdown reason
(`gpu_state.slowdown_mask`) are red dots on the clock line. Gaps between timed loops are
gaps in the lines. Public surface: `gpu_state_figure`.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dashboard.figures.theme import ACCENT, base_layout, empty_figure

BAD = "#c92a2a"
LIMIT = "#868e96"
PANELS = (
    ("sm_mhz", "SM clock (MHz)", ACCENT),
    ("power_w", "Power (W)", "#e8590c"),
    ("temp_c", "Temp (°C)", "#ae3ec9"),
)


def _gapped(
    times: list[float], windows: list[int], values: list[Any]
) -> tuple[list[float | None], list[Any]]:
    """x and y with a None between timed loops, so Plotly breaks the line there."""
    xs: list[float | None] = []
    ys: list[Any] = []
    for i, (t, v) in enumerate(zip(times, values, strict=True)):
        if i and windows[i] != windows[i - 1]:
            xs.append(None)
            ys.append(None)
        xs.append(t)
        ys.append(v)
    return xs, ys


def _limits(gpu: dict[str, Any]) -> dict[str, tuple[float | None, str]]:
    power = (gpu.get("summary") or {}).get("power_limit_w") or {}
    return {
        "sm_mhz": (gpu.get("sm_max_mhz"), "max"),
        "power_w": (power.get("max"), "limit"),
        "temp_c": (gpu.get("slowdown_temp_c"), "slowdown"),
    }


def gpu_state_figure(gpu: dict[str, Any], slowdown_mask: int) -> go.Figure:
    """The three panels of one GPU's sampled series."""
    series = gpu.get("series") or {}
    times = series.get("t_s") or []
    if not times:
        return empty_figure("NVML returned no samples for this GPU.")
    windows = series.get("window") or [0] * len(times)
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.06)
    limits = _limits(gpu)
    for row, (field, label, color) in enumerate(PANELS, start=1):
        xs, ys = _gapped(times, windows, series.get(field) or [None] * len(times))
        fig.add_trace(
            go.Scatter(x=xs, y=ys, mode="lines", name=label, line={"color": color, "width": 1.5},
                       showlegend=False,
                       hovertemplate=f"%{{x:.2f}} s · %{{y}} {label}<extra></extra>"),
            row=row, col=1,
        )  # fmt: skip
        limit, text = limits[field]
        if limit:
            fig.add_hline(y=limit, line_dash="dash", line_color=LIMIT, line_width=1, row=row,
                          col=1, annotation_text=f"{text} {limit:g}",
                          annotation_position="top left", annotation_font_size=10)  # fmt: skip
        fig.update_yaxes(title_text=label, title_font_size=11, row=row, col=1)
    reasons = series.get("reasons") or []
    slow = [i for i, r in enumerate(reasons) if r and r & slowdown_mask]
    if slow:
        fig.add_trace(
            go.Scatter(x=[times[i] for i in slow], y=[series["sm_mhz"][i] for i in slow],
                       mode="markers", name="sample with a slowdown reason (throttled)",
                       marker={"color": BAD, "size": 3, "opacity": 0.6},
                       hovertemplate="%{x:.2f} s · slowdown reason set<extra></extra>"),
            row=1, col=1,
        )  # fmt: skip
    base_layout(fig, height=460, top=40)
    fig.update_layout(
        showlegend=bool(slow),
        legend={"orientation": "h", "y": 1.02, "x": 1, "xanchor": "right", "yanchor": "bottom"},
    )
    fig.update_xaxes(title_text="seconds since the first timed loop", row=3, col=1)
    return fig
