"""Figures of the Memory snapshot tab, from the `/memory-snapshot/*` JSON.

- `segment_map_figure`: one row per allocator segment, its allocated blocks and free holes
  laid out by offset (MemoryViz's "allocator state" view), at the peak or at dump;
- `fragmentation_figure`: free bytes inside segments by hole size, peak beside dump;
- `snapshot_timeline_figure`: allocated and reserved after each trace entry, the peak
  marked, the top-level annotated phases shaded;
- `phase_peaks_figure`: each phase's peak allocated over its level at the start.

Public surface: `segment_map_figure`, `fragmentation_figure`, `snapshot_timeline_figure`,
`phase_peaks_figure`.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from dashboard.figures.theme import base_layout, empty_figure, escape_lines, plotly_text
from dashboard.format import format_bytes

__all__ = [
    "fragmentation_figure",
    "phase_peaks_figure",
    "segment_map_figure",
    "snapshot_timeline_figure",
]

JSON = dict[str, Any]
MB = 1e6  # SI, as `format_bytes` writes sizes everywhere on the page
ALLOCATED, FREE, RESERVED = "#3b5bdb", "#e8590c", "#868e96"
PHASE_COLORS = ("#d0ebff", "#d3f9d8", "#fff3bf", "#f3d9fa", "#ffe8cc")
MAX_ROWS = 80
LABEL_MIN_SHARE = 0.05


def _segment_label(s: JSON) -> str:
    return f"{s['address']:#x} · {format_bytes(s['size'])}"


def segment_map_figure(segments: list[JSON], at: str) -> go.Figure:
    """Blocks by offset inside each segment (the largest `MAX_ROWS` segments, by address)."""
    if not segments:
        return empty_figure("No segments: the allocator held no memory at this moment.")
    shown = sorted(
        sorted(segments, key=lambda s: -s["size"])[:MAX_ROWS], key=lambda s: s["address"]
    )
    fig = go.Figure()
    for state, color in (("allocated", ALLOCATED), ("free", FREE)):
        rows = [(s, b) for s in shown for b in s["blocks"] if b["state"] == state]
        fig.add_trace(
            go.Bar(
                orientation="h",
                name=f"{state} block" if state == "allocated" else "free hole (inactive)",
                y=[_segment_label(s) for s, _ in rows],
                x=[b["size"] / MB for _, b in rows],
                base=[b["offset"] / MB for _, b in rows],
                marker={"color": color, "line": {"color": "white", "width": 1}},
                customdata=[_block_hover(b) for _, b in rows],
                hovertemplate="%{customdata}<extra>%{y}</extra>",
            )
        )
    base_layout(fig, max(260, 22 * len(shown) + 90), top=30 if len(segments) > MAX_ROWS else 10)
    if len(segments) > MAX_ROWS:
        fig.update_layout(title_text=f"the {MAX_ROWS} largest of {len(segments)} segments")
    fig.update_layout(
        barmode="overlay", legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"}
    )
    fig.update_xaxes(title_text=f"offset in segment (MB), at {at}")
    fig.update_yaxes(type="category", autorange="reversed", tickfont={"size": 11})
    return fig


def _block_hover(b: JSON) -> str:
    head = f"{b['state']} {format_bytes(b['size'])} at +{b['offset']:#x}"
    if b["state"] == "allocated":
        head += f"<br>requested {format_bytes(b.get('requested'))}"
        head += "".join(f"<br>{escape_lines(f, 90)}" for f in b.get("frames", []))
    return head


def _bucket_hover(b: JSON | None) -> str:
    if b is None:
        return "no free hole of this size"
    whole = b["bytes"] - b.get("split_bytes", 0)
    return (
        f"{format_bytes(b['bytes'])} free in {b['holes']} holes<br>"
        f"{format_bytes(b.get('split_bytes'))} inside split segments (fragmentation)<br>"
        f"{format_bytes(whole)} in wholly free segments (cached, releasable)"
    )


def fragmentation_figure(frag: JSON) -> go.Figure:
    """Free bytes by hole size bucket, peak beside dump; each bar split into holes inside
    segments that also hold live blocks (fragmentation) and wholly free segments (cache
    that `torch.cuda.empty_cache()` could give back)."""
    buckets = sorted({(b["lo"], b["hi"]) for at in ("peak", "dump") for b in frag[at]})
    if not buckets:
        return empty_figure("No free holes inside segments: nothing is fragmented.")
    labels = [f"{_pow2(lo)} to {_pow2(hi)}" for lo, hi in buckets]
    fig = go.Figure()
    for at, (dark, light) in (("peak", (ALLOCATED, "#a5b4fc")), ("dump", (RESERVED, "#ced4da"))):
        by = {(b["lo"], b["hi"]): b for b in frag[at]}
        split = [by[k].get("split_bytes", 0) / MB if k in by else 0 for k in buckets]
        whole = [by[k]["bytes"] / MB - split[i] if k in by else 0 for i, k in enumerate(buckets)]
        hover = [_bucket_hover(by.get(k)) for k in buckets]
        for name, values, base, color in (
            (f"at {at}: in split segments", split, None, dark),
            (f"at {at}: wholly free segments", whole, split, light),
        ):
            fig.add_trace(
                go.Bar(
                    name=name, x=labels, y=values, base=base, offsetgroup=at, customdata=hover,
                    marker={"color": color}, hovertemplate=f"%{{customdata}}<extra>at {at}</extra>",
                )
            )  # fmt: skip
    base_layout(fig, 340)
    fig.update_layout(barmode="group", legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"})
    fig.update_xaxes(title_text="free hole size (log2 buckets)")
    fig.update_yaxes(title_text="free bytes (MB)")
    return fig


def _pow2(n: int) -> str:
    """A power of two in binary units, as bucket edges read best.

    >>> _pow2(512), _pow2(1 << 20), _pow2(3 << 30)
    ('512 B', '1 MiB', '3 GiB')
    """
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n} B"


def snapshot_timeline_figure(timeline: JSON, phases: list[JSON]) -> go.Figure:
    """Allocated and reserved over the history, in ms from its first entry."""
    times = timeline.get("time_us") or []
    if not times or times[0] is None:
        return empty_figure("No timed trace entries: record with _record_memory_history().")
    t0 = times[0]
    ms = [(t - t0) / 1000 for t in times]
    fig = go.Figure()
    for key, color, dash in (("reserved", RESERVED, "dot"), ("allocated", ALLOCATED, None)):
        fig.add_trace(
            go.Scatter(
                x=ms, y=[v / MB for v in timeline[key]], name=key, mode="lines",
                line={"color": color, "width": 2, "dash": dash}, line_shape="hv",
                hovertemplate="%{y:.1f} MB " + key + " at %{x:.3f} ms<extra></extra>",
            )
        )  # fmt: skip
    peak = timeline["peak"]
    if peak.get("time_us") is not None:
        fig.add_trace(
            go.Scatter(
                x=[(peak["time_us"] - t0) / 1000], y=[peak["allocated"] / MB], mode="markers",
                name=f"peak {format_bytes(peak['allocated'])}",
                marker={"color": FREE, "size": 11, "symbol": "diamond"},
            )
        )  # fmt: skip
    top = [p for p in phases if p["depth"] == min((q["depth"] for q in phases), default=0)]
    inner = [p for p in phases if p["depth"] == 1]
    span = max(ms[-1], 1e-9)
    for i, p in enumerate(inner or top):
        x0, x1 = (p["start_us"] - t0) / 1000, (p["end_us"] - t0) / 1000
        wide = (x1 - x0) / span > LABEL_MIN_SHARE  # a narrow band's label would overprint
        fig.add_vrect(
            x0=x0, x1=x1, fillcolor=PHASE_COLORS[i % len(PHASE_COLORS)], opacity=0.5,
            line_width=0, layer="below", annotation_text=plotly_text(p["name"]) if wide else "",
            annotation_position="top left", annotation_font_size=10,
        )  # fmt: skip
    base_layout(fig, 360, top=30)
    fig.update_layout(legend={"orientation": "h", "y": -0.25})
    fig.update_xaxes(title_text="ms since the first kept trace entry")
    fig.update_yaxes(title_text="MB", rangemode="tozero")
    return fig


def phase_peaks_figure(phases: list[JSON]) -> go.Figure:
    """Per phase occurrence: the level at its start and how far it rose inside."""
    if not phases:
        return empty_figure("No record_function phases in the snapshot's annotations.")
    labels = [f"{'· ' * p['depth']}{plotly_text(p['name'])} #{i}" for i, p in enumerate(phases)]
    fig = go.Figure()
    fig.add_trace(
        go.Bar(
            orientation="h", y=labels, x=[p["start_allocated"] / MB for p in phases],
            name="allocated at start", marker={"color": RESERVED},
            hovertemplate="%{x:.1f} MB at start<extra>%{y}</extra>",
        )
    )  # fmt: skip
    fig.add_trace(
        go.Bar(
            orientation="h", y=labels,
            x=[(p["peak_allocated"] - p["start_allocated"]) / MB for p in phases],
            name="rise to the phase's peak", marker={"color": ALLOCATED},
            customdata=[format_bytes(p["peak_allocated"]) for p in phases],
            hovertemplate="peak %{customdata}<extra>%{y}</extra>",
        )
    )  # fmt: skip
    base_layout(fig, max(240, 24 * len(phases) + 90))
    fig.update_layout(barmode="stack", legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"})
    fig.update_xaxes(title_text="allocated (MB)")
    fig.update_yaxes(type="category", autorange="reversed")
    return fig
