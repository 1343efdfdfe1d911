"""The overview's stacked bar: where each GPU's active span went.

Input is the summary's `devices` list (`ingest.summary.DeviceSummary`); each bar splits
the device's span into compute, communication, memcpy, memset and idle, counting every
instant once (the summary's `exclusive` split), so the parts add up to 100%.

Public surface: `time_split_figure`, `device_label`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from dashboard.figures.theme import CATEGORY_COLORS, base_layout, empty_figure
from dashboard.format import format_duration_ns, format_pct

__all__ = ["device_label", "time_split_figure"]

CATEGORIES = (
    ("compute", "compute_ns", "Compute kernels"),
    ("communication", "communication_ns", "Communication (NCCL/RCCL)"),
    ("memcpy", "memcpy_ns", "Memcpy"),
    ("memset", "memset_ns", "Memset"),
    ("idle", "idle_ns", "Idle"),
)


def device_label(device: dict[str, Any]) -> str:
    """`GPU 0`, or `rank 3 · GPU 0` in multi-rank traces."""
    rank = device.get("rank")
    gpu = f"GPU {device.get('device')}"
    return gpu if rank is None else f"rank {rank} · {gpu}"


def time_split_figure(devices: Sequence[dict[str, Any]]) -> go.Figure:
    """One horizontal 100% bar per device; hover gives the time and the share."""
    rows = [d for d in devices if (d.get("time") or {}).get("span_ns")]
    if not rows:
        return empty_figure("No GPU activity: was ProfilerActivity.CUDA enabled?")
    labels = [device_label(d) for d in rows]
    fig = go.Figure()
    for key, field, title in CATEGORIES:
        ns = [int(d["time"]["exclusive"].get(field, 0)) for d in rows]
        pct = [100.0 * n / d["time"]["span_ns"] for n, d in zip(ns, rows, strict=True)]
        fig.add_trace(
            go.Bar(
                name=title,
                y=labels,
                x=pct,
                orientation="h",
                marker={"color": CATEGORY_COLORS[key]},
                customdata=[
                    [format_duration_ns(n), format_pct(p)] for n, p in zip(ns, pct, strict=True)
                ],
                hovertemplate=f"{title}: %{{customdata[0]}} (%{{customdata[1]}} of span)"
                "<extra>%{y}</extra>",
            )
        )
    base_layout(fig, 110 + 36 * len(rows), top=40)
    fig.update_layout(
        barmode="stack",
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0, "traceorder": "normal"},
        bargap=0.35,
    )
    fig.update_xaxes(range=[0, 100], ticksuffix="%", title_text="share of the GPU's active span")
    fig.update_yaxes(autorange="reversed", automargin=True)
    return fig
