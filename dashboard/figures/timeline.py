"""Timeline windows to Plotly figures: one bar per item, lanes as rows, time in ms.

Bars (`go.Bar`, horizontal, `base` = start) rather than WebGL: the server already caps a
window at a few thousand items, SVG bars give exact hover and click on the whole bar,
and WebGL needs a GPU that headless Chromium here does not have. Rows are numeric
positions with the lane labels as tick text, so the payload does not repeat labels.

Public surface: `timeline_figure`, `overview_figure`, `CATEGORY_COLORS`, `ns_to_ms`,
`ms_to_ns`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from dashboard.api.timeline import Lane, Overview, TimelineItem, TimelineWindow
from dashboard.figures.theme import plotly_text
from dashboard.format import format_bytes, format_count, format_duration_ns

__all__ = [
    "CATEGORY_COLORS", "ms_to_ns", "ns_to_ms", "overview_figure", "timeline_figure",
    "window_shapes",
]  # fmt: skip

CATEGORY_COLORS = {
    "compute": "#3b5bdb",
    "communication": "#ae3ec9",
    "memcpy_htod": "#f08c00",
    "memcpy_dtoh": "#e8590c",
    "memcpy_dtod": "#ffa94d",
    "memcpy_ptop": "#d9480f",
    "memcpy": "#f08c00",
    "memset": "#fab005",
    "cpu_op": "#2f9e44",
    "runtime": "#66a80f",
    "python": "#8ce99a",
    "annotation": "#868e96",
    "sync": "#c92a2a",
    "other": "#adb5bd",
}
CATEGORY_NAMES = {
    "compute": "compute kernel", "communication": "communication", "memcpy_htod": "memcpy HtoD",
    "memcpy_dtoh": "memcpy DtoH", "memcpy_dtod": "memcpy DtoD", "memcpy_ptop": "memcpy PtoP",
    "memcpy": "memcpy", "memset": "memset", "cpu_op": "CPU op", "runtime": "runtime call",
    "python": "Python", "annotation": "annotation", "sync": "sync", "other": "other",
}  # fmt: skip
ROW_PX = 26
HIGHLIGHT = "#000000"
_NAME_CHARS = 120


def ns_to_ms(ns: float, origin: int) -> float:
    """Axis position (ms since the trace start) of a timestamp.

    >>> ns_to_ms(3_500_000, 1_000_000)
    2.5
    """
    return (ns - origin) / 1e6


def ms_to_ns(ms: float, origin: int) -> int:
    """Timestamp of an axis position.

    >>> ms_to_ns(2.5, 1_000_000)
    3500000
    """
    return round(origin + ms * 1e6)


def _hover(item: TimelineItem, lane: str) -> str:
    name = plotly_text(item["name"][:_NAME_CHARS])
    lines = [f"<b>{name}</b>", plotly_text(lane)]
    if item["id"] is None:
        busy = item["busy_ns"] / item["dur_ns"] if item["dur_ns"] else 1.0
        lines.append(
            f"{format_count(item['count'])} events merged · busy "
            f"{format_duration_ns(item['busy_ns'])} ({busy:.0%}) of "
            f"{format_duration_ns(item['dur_ns'])} · click to zoom in"
        )
    else:
        lines.append(f"duration {format_duration_ns(item['dur_ns'])}")
    args = item.get("args") or {}
    if "grid" in args or "block" in args:
        lines.append(f"grid {args.get('grid')} · block {args.get('block')}")
    if isinstance(args.get("bytes"), int | float):
        lines.append(f"bytes {format_bytes(args['bytes'])}")
    return "<br>".join(lines)


def _matches(item: TimelineItem, needle: str) -> bool:
    return bool(needle) and needle in item["name"].lower()


def _category_trace(
    category: str, items: Sequence[TimelineItem], rows: dict[int, int], labels: dict[int, str],
    origin: int, needle: str,
) -> go.Bar:  # fmt: skip
    items = sorted(items, key=lambda i: i["depth"])
    hits = [_matches(i, needle) for i in items]
    return go.Bar(
        name=CATEGORY_NAMES.get(category, category),
        orientation="h",
        y=[rows[i["lane"]] for i in items],
        base=[ns_to_ms(i["start_ns"], origin) for i in items],
        x=[i["dur_ns"] / 1e6 for i in items],
        width=[max(0.3, 0.8 - 0.15 * i["depth"]) for i in items],
        marker={
            "color": CATEGORY_COLORS.get(category, CATEGORY_COLORS["other"]),
            "opacity": [_opacity(i, hit) for i, hit in zip(items, hits, strict=True)],
            "line": {"width": [2 if hit else 0 for hit in hits], "color": HIGHLIGHT},
        },
        customdata=[
            [i["id"] if i["id"] is not None else -1, i["start_ns"], i["dur_ns"]] for i in items
        ],
        hovertext=[_hover(i, labels[i["lane"]]) for i in items],
        hovertemplate="%{hovertext}<extra></extra>",
    )


def _opacity(item: TimelineItem, hit: bool) -> float:
    """Merged blocks are as opaque as they are busy, so half-idle stretches look lighter."""
    if hit or item["id"] is not None or not item["dur_ns"]:
        return 1.0
    return round(0.35 + 0.65 * min(1.0, item["busy_ns"] / item["dur_ns"]), 3)


def timeline_figure(window: TimelineWindow, search: str = "") -> go.Figure:
    """Lanes top to bottom (GPU first), one coloured bar per item, the window as x range."""
    lanes: list[Lane] = window["lanes"]
    rows = {lane["lane"]: row for row, lane in enumerate(lanes)}
    labels = {lane["lane"]: lane["label"] for lane in lanes}
    by_category: dict[str, list[TimelineItem]] = defaultdict(list)
    for item in window["items"]:
        by_category[item["category"]].append(item)
    origin, needle = window["trace_start_ns"], search.strip().lower()
    traces = [
        _category_trace(c, by_category[c], rows, labels, origin, needle)
        for c in CATEGORY_COLORS
        if c in by_category
    ]
    fig = go.Figure(traces)
    fig.update_layout(
        template="plotly_white",
        barmode="overlay",
        height=max(260, 90 + ROW_PX * len(lanes)),
        margin={"l": 10, "r": 20, "t": 30, "b": 40},
        dragmode="zoom",
        hovermode="closest",
        legend={"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 0, "font": {"size": 11}},
        hoverlabel={"align": "left", "bgcolor": "white", "font": {"size": 12}},
        paper_bgcolor="rgba(0,0,0,0)",
        font={"size": 12},
    )
    fig.update_xaxes(
        range=[ns_to_ms(window["start_ns"], origin), ns_to_ms(window["end_ns"], origin)],
        title={"text": "time since trace start (ms)", "font": {"size": 12}},
        showgrid=True,
        zeroline=False,
    )
    fig.update_yaxes(
        tickvals=list(range(len(lanes))),
        ticktext=[plotly_text(lane["label"]) for lane in lanes],
        range=[len(lanes) - 0.5, -0.5],
        fixedrange=True,
        automargin=True,
        showgrid=False,
    )
    return fig


def window_shapes(start_ns: int, end_ns: int, window: tuple[int, int]) -> list[dict[str, Any]]:
    """The overview's shading of the current window (none when it is the whole trace).

    >>> window_shapes(0, 10, (0, 10))
    []
    >>> window_shapes(0, 10_000_000, (2_000_000, 3_000_000))[0]["x0"]
    2.0
    """
    if window[0] <= start_ns and window[1] >= end_ns:
        return []
    return [
        {
            "type": "rect", "xref": "x", "yref": "paper", "y0": 0, "y1": 1,
            "x0": ns_to_ms(window[0], start_ns), "x1": ns_to_ms(window[1], start_ns),
            "fillcolor": "#fab005", "opacity": 0.3, "line": {"width": 1, "color": "#e67700"},
        }
    ]  # fmt: skip


def overview_figure(overview: Overview, window: tuple[int, int] | None) -> go.Figure:
    """GPU utilisation over the whole trace, with the current window shaded."""
    origin = overview["trace_start_ns"]
    bins = overview["bins"]
    fig = go.Figure(
        go.Scatter(
            x=[ns_to_ms((b["start_ns"] + b["end_ns"]) / 2, origin) for b in bins],
            y=[100 * b["utilization"] for b in bins],
            mode="lines",
            line={"color": CATEGORY_COLORS["compute"], "width": 1, "shape": "hvh"},
            fill="tozeroy",
            hovertemplate="%{x:.3f} ms: %{y:.0f}% GPU busy<extra></extra>",
        )
    )
    if window is not None:
        fig.update_layout(shapes=window_shapes(origin, overview["trace_end_ns"], window))
    fig.update_layout(
        template="plotly_white",
        height=110,
        margin={"l": 10, "r": 20, "t": 8, "b": 24},
        dragmode="zoom",
        showlegend=False,
        paper_bgcolor="rgba(0,0,0,0)",
        font={"size": 11},
    )
    end = ns_to_ms(overview["trace_end_ns"], origin)
    fig.update_xaxes(range=[0, end], showgrid=False)
    fig.update_yaxes(range=[0, 100], fixedrange=True, title={"text": "GPU %"}, ticksuffix="")
    return fig
