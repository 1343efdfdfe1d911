"""The Memory snapshot tab: a PyTorch memory snapshot's peak, segment map, fragmentation,
history, top stacks and phases, as a pure builder from the API's JSON.

Public surface: `memory_snapshot_panel`.
"""

from __future__ import annotations

from typing import Any

from dash import dcc, html
from dash.dcc import Graph

from dashboard.components.status_badge import notice
from dashboard.components.trace_views import kpi, kpi_grid, tab_href
from dashboard.figures.memory_snapshot import (
    fragmentation_figure,
    phase_peaks_figure,
    segment_map_figure,
    snapshot_timeline_figure,
)
from dashboard.format import format_bytes

__all__ = ["memory_snapshot_panel"]

JSON = dict[str, Any]
GRAPH_CONFIG: Graph.Config = {"displaylogo": False, "responsive": True}
STACK_FRAMES = 6


def memory_snapshot_panel(data: JSON, trace_id: str, id_prefix: str) -> html.Div:
    """Every view of one device's snapshot, each in its card."""
    s, at = data["summary"], data["at"]
    peak, dump = s["peak"], s["dump"]
    tiles = [
        kpi("Peak allocated", format_bytes(peak["allocated"]),
            "Highest allocated after any trace entry, replayed from the dump backwards"),
        kpi("Reserved at peak", format_bytes(peak["reserved"])),
        kpi("Allocated at dump", format_bytes(dump["allocated"]), "Sum of active blocks"),
        kpi("Reserved at dump", format_bytes(dump["reserved"]), "Sum of segment sizes"),
        kpi("Free inside segments at dump", format_bytes(dump["free_bytes"]),
            f"of which in split segments: {format_bytes(dump['free_split_bytes'])}"),
        kpi("Trace entries", f"{s['entries']:,}", note=f"{dump['segments']} segments at dump"),
    ]  # fmt: skip
    notes = [notice(n, "warning") for n in s["notes"]]
    if len(s["devices"]) > 1:
        notes.insert(0, _device_links(s["devices"], s["device"], trace_id, f"{id_prefix}-devices"))
    other = "dump" if at == "peak" else "peak"
    device = str(s["device"]) if len(s["devices"]) > 1 else ""  # keep the device chosen
    cards = [
        _card("Allocated and reserved over time", f"{id_prefix}-timeline",
              snapshot_timeline_figure(data["timeline"], data["phases"]["items"])),
        _card(f"Segments and blocks at the {at}", f"{id_prefix}-segments",
              segment_map_figure(data["segments"]["items"], at),
              dcc.Link(f"show the map at the {other}", id=f"{id_prefix}-at-link",
                       href=tab_href(trace_id, "memsnap", at=other, device=device))),
        _card("Fragmentation: free bytes inside segments by hole size",
              f"{id_prefix}-fragmentation",
              fragmentation_figure(data["fragmentation"])),
        html.Section([html.H2("Top allocation stacks at the peak"),
                      _stacks_table(data["stacks"], f"{id_prefix}-stacks")], className="card"),
        _card(f"Peak by phase ({data['phases']['source']})", f"{id_prefix}-phases",
              phase_peaks_figure(data["phases"]["items"])),
    ]  # fmt: skip
    return html.Div([kpi_grid(tiles, f"{id_prefix}-kpis"), *notes, *cards], id=id_prefix)


def _device_links(devices: list[int], current: int, trace_id: str, element_id: str) -> html.Div:
    """One link per GPU: each device's allocator is replayed on its own."""
    links = [
        dcc.Link(f"GPU {d}", href=tab_href(trace_id, "memsnap", device=str(d)),
                 className="chip chip-active" if d == current else "chip")
        for d in devices
    ]  # fmt: skip
    return html.Div(["Device: ", *links], className="controls memory-ops-choice", id=element_id)


def _card(title: str, graph_id: str, figure: Any, *extra: Any) -> html.Section:
    graph = dcc.Graph(id=graph_id, figure=figure, config=GRAPH_CONFIG)
    return html.Section([html.H2(title), *extra, graph], className="card")


def _stacks_table(stacks: JSON, element_id: str) -> html.Table | html.Div:
    if not stacks["items"]:
        return html.Div("No allocation was live at the peak.", className="muted", id=element_id)
    total = stacks["peak_allocated"] or 1
    head = html.Thead(html.Tr([html.Th(c) for c in ("Bytes at peak", "Share", "Blocks", "Stack")]))
    rows = [
        html.Tr(
            [
                html.Td(format_bytes(r["bytes"]), className="num"),
                html.Td(f"{100 * r['bytes'] / total:.1f}%", className="num"),
                html.Td(str(r["blocks"]), className="num"),
                html.Td(html.Pre("\n".join(r["frames"][:STACK_FRAMES]), className="stack")),
            ]
        )
        for r in stacks["items"]
    ]
    return html.Table([head, html.Tbody(rows)], className="data-table", id=element_id)
