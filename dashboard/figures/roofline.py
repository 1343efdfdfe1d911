"""The roofline chart: arithmetic intensity against achieved FLOP/s, both on log axes.

Input is the `/roofline` JSON. Roofs are drawn per device (a dashed memory roof, then one
flat roof per precision); points are sized by their share of kernel time and coloured by
precision or by which roof bounds them. A second trace's points can be overlaid as open
markers, joined to the same kernel's point in the first trace so a move is visible.

Public surface: `roofline_figure`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from dashboard.figures.theme import (
    PRECISION_COLORS,
    base_layout,
    empty_figure,
    escape_lines,
    plotly_text,
)
from dashboard.format import (
    format_bandwidth,
    format_bytes,
    format_count,
    format_duration_ns,
    format_flop_rate,
    format_flops,
    format_pct,
)

__all__ = ["roofline_figure"]

BOUND_COLORS = {"memory": "#f08c00", "compute": "#3b5bdb", None: "#868e96"}
ROOF_DASH = {"memory": "dash"}
MIN_SIZE, MAX_SIZE = 7.0, 42.0
JSON = dict[str, Any]


def _x_range(points: Sequence[JSON], devices: Sequence[JSON]) -> tuple[float, float]:
    xs = [p["intensity"] for p in points if p["intensity"] > 0]
    ridges = [
        r["peak_flops_per_s"] / d["peak_dram_bytes_per_s"]
        for d in devices
        if d.get("peak_dram_bytes_per_s")
        for r in d["roofs"]
    ]
    values = xs + ridges or [1.0]
    return min(values) / 10, max(values) * 10


def _roof_color(precision: str) -> str:
    return PRECISION_COLORS.get(precision.split("_")[0], "#adb5bd")


def _merged_roofs(roofs: Sequence[JSON]) -> list[JSON]:
    """Roofs at the same height drawn once, labelled with every precision that has it."""
    by_peak: dict[float, list[str]] = {}
    for r in roofs:
        by_peak.setdefault(r["peak_flops_per_s"], []).append(r["precision"])
    return [{"precision": " / ".join(ps), "peak_flops_per_s": p} for p, ps in by_peak.items()]


def _roof_traces(devices: Sequence[JSON], x0: float, x1: float) -> list[go.Scatter]:
    """Per device: a flat roof per precision from its ridge point, and the DRAM diagonal."""
    traces = []
    for d in devices[:2]:
        bw = d.get("peak_dram_bytes_per_s")
        prefix = f"GPU {d['index']} " if len(devices) > 1 else ""
        for r in _merged_roofs(d["roofs"]):
            peak, name = r["peak_flops_per_s"], r["precision"].replace("_", " ")
            start = peak / bw if bw else x0
            text = f"{prefix}{name} {format_flop_rate(peak)}"
            traces.append(
                go.Scatter(
                    x=[start, x1],
                    y=[peak, peak],
                    mode="lines+text",
                    text=["", text],
                    textposition="top left",
                    textfont={"size": 11, "color": "#495057"},
                    line={"color": _roof_color(r["precision"]), "width": 1.5},
                    name=text,
                    legendgroup="roofs",
                    hovertemplate=f"{plotly_text(text)} peak<extra></extra>",
                    showlegend=False,
                )
            )
        if bw:
            top = max((r["peak_flops_per_s"] for r in d["roofs"]), default=bw * x1)
            traces.append(
                go.Scatter(
                    x=[x0, top / bw],
                    y=[bw * x0, top],
                    mode="lines",
                    line={"color": "#495057", "width": 2, "dash": "dash"},
                    name=f"{prefix}DRAM roof {format_bandwidth(bw)}",
                    legendgroup="roofs",
                    hovertemplate=f"DRAM {format_bandwidth(bw)}<extra></extra>",
                )
            )
    return traces


def _log_ticks(lo: float, hi: float) -> tuple[list[float], list[str]]:
    """Powers of ten across [lo, hi] labelled `10 TFLOP/s`, not `1e13`."""
    vals = [10.0**k for k in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)]
    return vals, [format_flop_rate(v) for v in vals]


def _y_range(points: Sequence[JSON], devices: Sequence[JSON], x0: float) -> tuple[float, float]:
    ys = [p["flops_per_s"] for p in points if p["flops_per_s"] > 0]
    peaks = [r["peak_flops_per_s"] for d in devices for r in d["roofs"]]
    lows = [d["peak_dram_bytes_per_s"] * x0 for d in devices if d.get("peak_dram_bytes_per_s")]
    values = ys + peaks + lows or [1e12]
    return max(min(ys + peaks or values) / 10, min(values)), max(values) * 3


def _size(share: float, top: float) -> float:
    return MIN_SIZE + (MAX_SIZE - MIN_SIZE) * math.sqrt(share / top) if top > 0 else MIN_SIZE


def _hover(p: JSON, prefix: str) -> str:
    tag = " (estimate)" if p.get("estimated") else " (measured)"
    op = f"op: {p['op']}<br>" if p.get("op") else ""
    return (
        f"{prefix}<b>{escape_lines(p['name'])}</b><br>{op}"
        f"time: {format_duration_ns(p['time_ns'])} in {format_count(p['count'])} launches "
        f"({format_pct(100 * p['time_share'])} of kernel time)<br>"
        f"FLOPs{tag}: {format_flops(p['flops'])}  bytes: {format_bytes(p['bytes'])}<br>"
        f"intensity: {p['intensity']:.3g} FLOP/byte<br>"
        f"achieved: {format_flop_rate(p['flops_per_s'])}<br>"
        f"precision: {p['precision']}  bound: {p.get('bound') or 'unknown'}"
        f"{_hierarchy_hover(p)}"
    )


def _hierarchy_hover(p: JSON) -> str:
    """Nsight Compute's hit rates and memory level, where the point has them (issue #26)."""
    parts = [
        f"{label} hit: {format_pct(p[key])}"
        for label, key in (("L1/TEX", "l1_hit_pct"), ("L2", "l2_hit_pct"))
        if p.get(key) is not None
    ]
    if p.get("memory_bound_level"):
        parts.append(f"nearest memory roof: {p['memory_bound_level']}")
    return "<br>" + "  ".join(parts) if parts else ""


def _point_traces(
    points: Sequence[JSON], color_by: str, label: str, open_: bool
) -> list[go.Scatter]:
    top = max((p["time_share"] for p in points), default=0.0)
    key = "bound" if color_by == "bound" else "precision"
    groups: dict[Any, list[JSON]] = {}
    for p in points:
        groups.setdefault(p.get(key), []).append(p)
    traces = []
    for value, ps in groups.items():
        colors = BOUND_COLORS if key == "bound" else PRECISION_COLORS
        color = colors.get(value, "#868e96")
        name = f"{value or 'unknown'}{'-bound' if key == 'bound' and value else ''}"
        traces.append(
            go.Scatter(
                x=[p["intensity"] for p in ps],
                y=[p["flops_per_s"] for p in ps],
                mode="markers",
                name=f"{label}{name}",
                legendgroup=label or "points",
                marker={
                    "size": [_size(p["time_share"], top) for p in ps],
                    "color": color,
                    "symbol": "circle-open" if open_ else "circle",
                    "line": {"width": 2 if open_ else 1, "color": color if open_ else "white"},
                    "opacity": 0.9 if open_ else 0.75,
                },
                hovertext=[_hover(p, label) for p in ps],
                hovertemplate="%{hovertext}<extra></extra>",
                customdata=[p["name"] for p in ps],  # a click selects the kernel's ncu sections
            )
        )
    return traces


def _moves(a: Sequence[JSON], b: Sequence[JSON]) -> go.Scatter | None:
    """Dotted segments from each kernel's point in A to the same kernel's point in B."""
    where = {(p["name"], p.get("op")): p for p in a}
    xs: list[float | None] = []
    ys: list[float | None] = []
    for p in b:
        q = where.get((p["name"], p.get("op")))
        if q is not None:
            xs += [q["intensity"], p["intensity"], None]
            ys += [q["flops_per_s"], p["flops_per_s"], None]
    if not xs:
        return None
    return go.Scatter(
        x=xs,
        y=ys,
        mode="lines",
        line={"color": "#868e96", "dash": "dot"},
        name="same kernel, A → B",
        hoverinfo="skip",
    )


def roofline_figure(
    roofline: JSON, color_by: str = "precision", overlay: JSON | None = None
) -> go.Figure:
    """The chart, or an empty state that says why there are no points."""
    points = roofline.get("points") or []
    other = (overlay or {}).get("points") or []
    if not points and not other:
        return empty_figure(roofline.get("note") or "No roofline points for this trace")
    devices = roofline.get("devices") or []
    x0, x1 = _x_range([*points, *other], devices)
    fig = go.Figure(_roof_traces(devices, x0, x1))
    a_label, b_label = ("A: ", "B: ") if overlay else ("", "")
    for t in _point_traces(points, color_by, a_label, False):
        fig.add_trace(t)
    if overlay:
        for t in _point_traces(other, color_by, b_label, True):
            fig.add_trace(t)
        moves = _moves(points, other)
        if moves is not None:
            fig.add_trace(moves)
    base_layout(fig, 560, top=30)
    fig.update_xaxes(
        type="log",
        title_text="arithmetic intensity (FLOP/byte)",
        range=[math.log10(x0), math.log10(x1)],
    )
    y0, y1 = _y_range([*points, *other], devices, x0)
    tickvals, ticktext = _log_ticks(y0, y1)
    fig.update_yaxes(
        type="log",
        title_text="achieved FLOP/s",
        range=[math.log10(y0), math.log10(y1)],
        tickvals=tickvals,
        ticktext=ticktext,
    )
    fig.update_layout(legend={"itemsizing": "constant"})
    if roofline.get("kind") == "estimated":
        fig.add_annotation(
            text="Points are ESTIMATES from op shapes",
            xref="paper",
            yref="paper",
            x=0.01,
            y=0.99,
            showarrow=False,
            font={"color": "#e67700", "size": 13},
            bgcolor="#fff3bf",
        )
    return fig
