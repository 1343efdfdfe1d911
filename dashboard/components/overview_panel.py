"""The Overview tab: headline numbers, the time split per GPU, findings and top kernels.

Pure: it takes the API's JSON (trace, summary, device peaks, findings, top kernels) and
returns components; the page fetches. A part the summary could not compute shows "—".

Public surface: `overview_panel`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dash import dcc, html
from dash.dcc import Graph
from dash.development.base_component import Component

from dashboard.api.traces import KernelStats, Trace
from dashboard.components.kernel_table import kernel_table
from dashboard.components.status_badge import notice
from dashboard.components.step_marker import marker_note
from dashboard.components.trace_views import findings_list, kpi, kpi_grid, phase_memory_table
from dashboard.figures import kernel_top_figure
from dashboard.figures.overview import time_split_figure
from dashboard.format import (
    device_label,
    format_bandwidth,
    format_bytes,
    format_count,
    format_duration_ns,
    format_flop_rate,
    format_pct,
    precision_label,
)

__all__ = ["overview_panel"]

JSON = dict[str, Any]
GRAPH_CONFIG: Graph.Config = {"displaylogo": False, "responsive": True}
PERCENTILES = "p50 is the median (as numpy.median and nsys stats), p95 the nearest-rank value"
NO_TIMELINE = (
    "This file has no timeline: the profiler ran each kernel alone (Nsight Compute replays "
    "them), so utilization, idle time, overlap and launch delays do not apply."
)
NO_KERNELS = "This trace has no GPU kernels: was ProfilerActivity.CUDA enabled?"


def _get(d: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


def _pair(dist: Any) -> str:
    """`p50 / p95` of a summary distribution."""
    if not isinstance(dist, dict):
        return "—"
    return f"{format_duration_ns(dist.get('p50_ns'))} / {format_duration_ns(dist.get('p95_ns'))}"


def _device_text(device: JSON) -> str:
    """Name, bandwidth and the peak of every precision, each labelled: a single "peak" would
    be the fastest precision's (fp8 on an H200), whatever the trace's kernels ran in."""
    roofs = sorted(device.get("roofs", []), key=lambda r: r["peak_flops_per_s"])
    parts = [device_label(device)]
    if device.get("peak_dram_bytes_per_s"):
        parts.append(format_bandwidth(device["peak_dram_bytes_per_s"]))
    parts += [
        f"{precision_label(r['precision'])} {format_flop_rate(r['peak_flops_per_s'])}"
        for r in roofs
    ]
    return " · ".join(parts)


def _devices(trace: Trace, peaks: Sequence[JSON]) -> html.Div:
    by_index = {d["index"]: d for d in peaks}
    lines = []
    for d in trace["devices"]:
        known = by_index.get(d.get("index", -1))
        text = _device_text({**known, "rank": d.get("rank")}) if known else device_label(d)
        source = f"peaks from {known['source']}" if known else "no peak FLOP/s or bandwidth known"
        lines.append(html.Div(text, title=source, className="device-line"))
    return html.Div(lines or [html.Div("No GPU described in this trace", className="muted")])


def _peak_memory(summary: JSON) -> str:
    peaks = [m.get("peak_allocated_bytes") for m in summary.get("memory") or []]
    values = [p for p in peaks if isinstance(p, int)]
    return format_bytes(max(values)) if values else "—"


def _step_tile(s: JSON) -> html.Div:
    found = s.get("steps")
    steps: JSON = found if isinstance(found, dict) else {}
    count = len(steps.get("steps") or [])
    note = marker_note(steps.get("marker"), steps.get("marker_source"), count)
    hint = (
        "CPU ranges of the step marker: ProfilerStep#N, else a repeated top-level "
        f"record_function or NVTX range, or the marker chosen on the Timeline; {PERCENTILES}"
    )
    return kpi("Step time p50 / p95", _pair(steps.get("cpu")), hint, note or None)


def _untimed_tiles(trace: Trace, s: JSON) -> list[html.Div]:
    """A file without a timeline has kernel durations but no span, gaps or overlap."""
    fusion = s.get("fusion") or {}
    return [
        kpi("Format", trace["format"] or "—"),
        kpi(
            "Kernel time",
            format_duration_ns(_get(s, "gpu", "kernel_ns")),
            "sum of the kernels' durations, each measured alone",
        ),
        kpi("Kernels", format_count(_get(s, "gpu", "kernels")), "launches"),
        kpi("Fused kernel time", format_pct(fusion.get("fused_pct")), fusion.get("rule")),
    ]


def _tiles(trace: Trace, s: JSON) -> list[html.Div]:
    if s.get("timeline") is False:
        return _untimed_tiles(trace, s)
    time = _get(s, "gpu", "time") or {}
    fusion = s.get("fusion") or {}
    return [
        kpi("Format", trace["format"] or "—"),
        kpi("Duration", format_duration_ns(trace["duration_ns"])),
        _step_tile(s),
        kpi(
            "GPU utilization",
            format_pct(time.get("busy_pct")),
            "share of the GPU span with a kernel, memcpy or memset running",
        ),
        kpi("GPU idle", format_pct(time.get("idle_pct"))),
        kpi(
            "Comm/compute overlap",
            format_pct(time.get("comm_compute_overlap_pct")),
            "share of communication time during which compute kernels also ran",
        ),
        kpi(
            "H2D/D2H overlap",
            format_pct(time.get("copy_compute_overlap_pct")),
            "share of host-device copy time during which compute kernels also ran",
        ),
        kpi(
            "Pinned / pageable",
            f"{format_pct(_get(s, 'transfers', 'pinned_pct'))} / "
            f"{format_pct(_get(s, 'transfers', 'pageable_pct'))}",
            "share of H2D+D2H bytes whose host memory was pinned / pageable",
        ),
        kpi(
            "Launch delay p50 / p95",
            _pair(_get(s, "launch", "delay")),
            f"from the CPU launch call to the kernel's start on the GPU; {PERCENTILES}",
        ),
        kpi("Peak memory", _peak_memory(s), "highest allocator total of any GPU"),
        kpi("Fused kernel time", format_pct(fusion.get("fused_pct")), fusion.get("rule")),
        kpi("Kernels", format_count(_get(s, "gpu", "kernels"))),
    ]


def _top_kernels(kernels: KernelStats | None, id_prefix: str) -> Component:
    if kernels is None:
        return notice("Could not load kernel stats.", "error")
    if not kernels["items"]:
        return html.Div(NO_KERNELS, className="empty-state", id=f"{id_prefix}-kernels-empty")
    return html.Div(
        [
            dcc.Graph(
                id=f"{id_prefix}-kernels-chart",
                figure=kernel_top_figure(kernels["items"]),
                config=GRAPH_CONFIG,
            ),
            kernel_table(kernels["items"], table_id=f"{id_prefix}-kernels-table"),
        ]
    )


def overview_panel(
    trace: Trace,
    summary: JSON | None,
    peaks: Sequence[JSON],
    findings: Sequence[JSON] | None,
    kernels: KernelStats | None,
    id_prefix: str,
) -> html.Div:
    """Everything on the Overview tab, top to bottom in reading order."""
    s = summary or {}
    untimed = s.get("timeline") is False
    stale = (
        []
        if "version" in s
        else [
            notice(
                "This trace's summary has no time split yet (it was ingested before summaries "
                "existed): re-ingest it to see utilization, overlap and findings.",
                "warning",
            )
        ]
    )
    if untimed:
        stale.append(notice(NO_TIMELINE, "info"))
    split = html.Section(
        [
            html.H2("Where each GPU's time went"),
            dcc.Graph(
                id=f"{id_prefix}-split-chart",
                figure=time_split_figure(s.get("devices") or []),
                config=GRAPH_CONFIG,
            ),
        ],
        className="card",
    )
    phases = html.Section(
        [
            html.H2("Peak memory per phase"),
            phase_memory_table(s.get("memory_phases") or [], bool(s.get("memory"))),
        ],
        className="card",
    )
    return html.Div(
        [
            *stale,
            html.Section(
                [
                    html.H2("Devices"),
                    _devices(trace, peaks),
                    kpi_grid(_tiles(trace, s), f"{id_prefix}-kpis"),
                ],
                className="card",
            ),
            html.Section(
                [html.H2("Findings"), findings_list(findings or [], f"{id_prefix}-findings")],
                className="card",
            ),
            *([] if untimed else [split]),
            *([] if untimed else [phases]),
            html.Section(
                [html.H2("Top kernels by total GPU time"), _top_kernels(kernels, id_prefix)],
                className="card",
            ),
        ]
    )
