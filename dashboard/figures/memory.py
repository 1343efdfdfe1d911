"""Allocated and reserved GPU memory over time, one pair of lines per device.

Input is the `/memory` JSON. Time runs from the trace's start in ms; the band between
reserved and allocated is shaded, since that gap is the fragmentation the page reports,
and each device's peak allocation gets a marker.

Public surface: `memory_figure`.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from dashboard.figures.theme import base_layout, empty_figure
from dashboard.format import format_bytes, format_duration_ns, format_pct

__all__ = ["memory_figure"]

DEVICE_COLORS = ("#3b5bdb", "#2f9e44", "#e8590c", "#ae3ec9", "#1098ad", "#f08c00")
JSON = dict[str, Any]


def _label(d: JSON) -> str:
    gpu = f"GPU {d['device']}"
    return gpu if d.get("rank") is None else f"rank {d['rank']} · {gpu}"


def _unit(devices: list[JSON]) -> tuple[str, float]:
    """GB, or MB when no device reaches 1 GB, so the axis reads `70 MB`, not `0.07 GB`."""
    top = max(max(d["allocated"] + [r or 0 for r in d["reserved"]]) for d in devices)
    return ("GB", 1e9) if top >= 1e9 else ("MB", 1e6)


def _device_traces(d: JSON, t0: int, color: str, unit: tuple[str, float]) -> list[go.Scatter]:
    label = _label(d)
    ms = [(t - t0) / 1e6 for t in d["t_ns"]]
    name, scale = unit
    gb_alloc = [a / scale for a in d["allocated"]]
    traces = [
        go.Scatter(
            x=ms,
            y=gb_alloc,
            mode="lines",
            name=f"{label} allocated",
            line={"color": color, "width": 2},
            line_shape="hv",
            hovertemplate="%{y:.3f} "
            + name
            + " allocated at %{x:.3f} ms<extra>"
            + label
            + "</extra>",
        )
    ]
    if any(r is not None for r in d["reserved"]):
        reserved = [None if r is None else r / scale for r in d["reserved"]]
        traces.append(
            go.Scatter(
                x=ms,
                y=reserved,
                mode="lines",
                name=f"{label} reserved (shaded: unused)",
                line={"color": color, "width": 1.5, "dash": "dash"},
                line_shape="hv",
                fill="tonexty",
                fillcolor="rgba(240,140,0,0.15)",
                hovertemplate="%{y:.3f} "
                + name
                + " reserved at %{x:.3f} ms<extra>"
                + label
                + "</extra>",
            )
        )
    peak_ms = (d["peak_allocated_t_ns"] - t0) / 1e6
    frag = d.get("fragmentation_at_peak_pct")
    frag_text = f"; {format_pct(frag)} of reserved unused" if frag is not None else ""
    traces.append(
        go.Scatter(
            x=[peak_ms],
            y=[d["peak_allocated"] / scale],
            mode="markers+text",
            marker={
                "symbol": "star",
                "size": 14,
                "color": color,
                "line": {"color": "white", "width": 1},
            },
            text=[f"peak {format_bytes(d['peak_allocated'])}"],
            textposition="top center",
            name=f"{label} peak",
            showlegend=False,
            hovertemplate=(
                f"peak allocated {format_bytes(d['peak_allocated'])} at "
                f"{format_duration_ns(d['peak_allocated_t_ns'] - t0)}{frag_text}"
                f"<extra>{label}</extra>"
            ),
        )
    )
    return traces


def memory_figure(memory: JSON) -> go.Figure:
    """The chart, or an empty state saying how to record memory."""
    devices = [d for d in memory.get("devices") or [] if d.get("t_ns")]
    if not devices:
        return empty_figure(memory.get("note") or "No GPU memory events in this trace")
    t0 = memory.get("start_ns") or min(d["t_ns"][0] for d in devices)
    fig = go.Figure()
    unit = _unit(devices)
    for i, d in enumerate(devices):
        for t in _device_traces(d, t0, DEVICE_COLORS[i % len(DEVICE_COLORS)], unit):
            fig.add_trace(t)
    base_layout(fig, 440, top=40)
    fig.update_layout(legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0})
    fig.update_xaxes(title_text="time since trace start (ms)", ticksuffix=" ms")
    fig.update_yaxes(
        title_text=f"GPU memory ({unit[0]})", ticksuffix=f" {unit[0]}", rangemode="tozero"
    )
    return fig
