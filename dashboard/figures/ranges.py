"""Charts of the Ranges tab: one range's durations (box with every instance as a point) and
the CUDA graph replays (span and GPU time per replay, one colour per graph).

Inputs are the `/ranges/durations` and `/graphs` JSON. Durations are drawn in the one unit
(ns, µs, ms or s) that suits their largest, so the axis reads `4.5 ms`, not `4500000`.

Public surface: `range_durations_figure`, `graph_replays_figure`.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from dashboard.figures.theme import ACCENT, base_layout, empty_figure, plotly_text
from dashboard.format import duration_unit

__all__ = ["graph_replays_figure", "range_durations_figure"]

JSON = dict[str, Any]
GRAPH_COLORS = ("#3b5bdb", "#2f9e44", "#e8590c", "#ae3ec9", "#1098ad", "#f08c00")
_SERIES = (("span_ns", "span", "circle"), ("gpu_ns", "GPU time", "circle-open"))


def _axis_unit(values: list[int] | list[float]) -> tuple[str, float]:
    """The unit of the largest value (`dashboard.format.duration_unit`), so no tick needs a
    `k`: the axis reads `20 ms`, not `20k µs`.

    >>> _axis_unit([1_500, 2_000]), _axis_unit([12]), _axis_unit([50_000, 20_000_000])
    (('µs', 1000.0), ('ns', 1.0), ('ms', 1000000.0))
    """
    return duration_unit(max((abs(v) for v in values), default=0))


def range_durations_figure(durations: JSON, label: str) -> go.Figure:
    """A horizontal box of one range's durations with every instance drawn as a point."""
    durs = durations["dur_ns"]
    if not durs:
        return empty_figure("No instance of this range.")
    unit, scale = _axis_unit(durs)
    t0 = min(durations["start_ns"])
    fig = go.Figure(
        go.Box(
            x=[d / scale for d in durs],
            name="",
            boxpoints="all",
            jitter=0.5,
            pointpos=0,
            marker={"color": ACCENT, "size": 6, "opacity": 0.6},
            line={"color": "#495057"},
            fillcolor="rgba(59,91,219,0.08)",
            customdata=[(s - t0) / 1e6 for s in durations["start_ns"]],
            hovertemplate=f"%{{x:.4g}} {unit}<br>at +%{{customdata:.3f}} ms<extra></extra>",
        )
    )
    base_layout(fig, 230, top=30)
    count = durations["count"]
    plural = "instance" if count == 1 else "instances"
    shown = f"{count} {plural}" if len(durs) == count else f"the {len(durs)} longest of {count}"
    fig.update_layout(
        title={
            "text": plotly_text(f"{label}: {shown}"),
            "font": {"size": 13},
            "x": 0.01,
        }
    )
    fig.update_xaxes(title_text=f"duration ({unit})", rangemode="tozero")
    fig.update_yaxes(visible=False)
    return fig


def graph_replays_figure(graphs: list[JSON]) -> go.Figure:
    """Per graph, each replay's span on the GPU (filled) and summed GPU time (hollow)."""
    replays = [r for g in graphs for r in g["replays"]]
    if not replays:
        return empty_figure("No CUDA graph replay ran GPU work.")
    unit, scale = _axis_unit([r["span_ns"] for r in replays])
    fig = go.Figure()
    for i, g in enumerate(graphs):
        color = GRAPH_COLORS[i % len(GRAPH_COLORS)]
        x = list(range(1, len(g["replays"]) + 1))
        for field, label, symbol in (
            ("span_ns", "span", "circle"),
            ("gpu_ns", "GPU time", "circle-open"),
        ):
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=[r[field] / scale for r in g["replays"]],
                    mode="markers+lines" if len(x) < 200 else "markers",
                    name=f"graph {g['graph']} {label}",
                    marker={"color": color, "symbol": symbol, "size": 7},
                    line={
                        "color": color,
                        "width": 1,
                        "dash": "dot" if field == "gpu_ns" else "solid",
                    },
                    hovertemplate=f"replay %{{x}}<br>{label} %{{y:.4g}} {unit}<extra></extra>",
                )
            )
    base_layout(fig, 300, top=20)
    most = max(len(g["replays"]) for g in graphs)
    fig.update_xaxes(title_text="replay (launch order)", dtick=1 if most <= 20 else None)
    fig.update_yaxes(title_text=unit, rangemode="tozero")
    fig.update_layout(legend={"orientation": "h", "y": -0.25})
    return fig
