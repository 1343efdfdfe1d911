"""The Roofline and Memory tabs, as pure builders from the API's JSON.

Public surface: `roofline_panel`, `memory_panel`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dash import dcc, html
from dash.dcc import Graph

from dashboard.components.status_badge import notice
from dashboard.figures.memory import memory_figure
from dashboard.figures.roofline import roofline_figure
from dashboard.format import format_bandwidth, format_bytes, format_flop_rate, format_pct

__all__ = ["memory_panel", "roofline_panel"]

JSON = dict[str, Any]
GRAPH_CONFIG: Graph.Config = {"displaylogo": False, "responsive": True}


def _roof_sources(devices: Sequence[JSON]) -> html.Ul:
    items = []
    for d in devices:
        roofs = ", ".join(
            f"{r['precision'].replace('_', ' ')} {format_flop_rate(r['peak_flops_per_s'])}"
            for r in d["roofs"]
        )
        bw = format_bandwidth(d.get("peak_dram_bytes_per_s"))
        source: list[Any] = [f" — {d['source']}"]
        if d.get("source_url"):
            source = [" — ", html.A(d["source"], href=d["source_url"], target="_blank")]
        items.append(html.Li([f"GPU {d['index']} ({d['name']}): DRAM {bw}; {roofs}", *source]))
    return html.Ul(items, className="roof-sources")


def _controls(color_by: str, vs: str | None, others: Sequence[JSON], id_prefix: str) -> html.Div:
    return html.Div(
        [
            html.Label("Colour by", className="control-label"),
            dcc.RadioItems(
                id=f"{id_prefix}-color",
                value=color_by,
                inline=True,
                options=[
                    {"label": " precision", "value": "precision"},
                    {"label": " memory- or compute-bound", "value": "bound"},
                ],
                className="control-radio",
            ),
            html.Label("Overlay trace (B)", htmlFor=f"{id_prefix}-vs", className="control-label"),
            dcc.Dropdown(
                id=f"{id_prefix}-vs",
                value=vs,
                placeholder="none",
                options=[{"label": t["name"], "value": t["id"]} for t in others],
                className="control-select",
            ),
        ],
        className="controls",
    )


def roofline_panel(
    roofline: JSON,
    overlay: JSON | None,
    color_by: str,
    vs: str | None,
    others: Sequence[JSON],
    id_prefix: str,
) -> html.Div:
    """Chart, the estimate/measurement note, and where each roof's number came from."""
    kind = roofline.get("kind")
    covered = roofline.get("covered_time_share") or 0.0
    note_text = roofline.get("note", "")
    if kind != "none":
        note_text += f" Points cover {format_pct(100 * covered)} of kernel time."
    children: list[Any] = [
        _controls(color_by, vs, others, id_prefix),
        notice(
            note_text,
            "warning" if kind == "estimated" else "info",
            f"{id_prefix}-note",
        ),
        dcc.Graph(
            id=f"{id_prefix}-chart",
            figure=roofline_figure(roofline, color_by, overlay),
            config=GRAPH_CONFIG,
        ),
    ]
    if overlay is not None:
        children.append(html.Div(f"B: {overlay.get('note', '')}", className="muted small"))
    if roofline.get("devices"):
        children += [html.H2("Roofs"), _roof_sources(roofline["devices"])]
    return html.Div(html.Section(children, className="card"))


def _peak_rows(devices: Sequence[JSON]) -> html.Table:
    head = (
        "Device",
        "Peak allocated",
        "Peak reserved",
        "Fragmentation at peak",
        "Max fragmentation",
        "Samples",
    )
    rows = [
        html.Tr(
            [
                html.Td(
                    f"GPU {d['device']}"
                    if d.get("rank") is None
                    else f"rank {d['rank']} · GPU {d['device']}"
                ),
                html.Td(format_bytes(d["peak_allocated"]), className="num"),
                html.Td(format_bytes(d.get("peak_reserved")), className="num"),
                html.Td(format_pct(d.get("fragmentation_at_peak_pct")), className="num"),
                html.Td(format_pct(d.get("fragmentation_max_pct")), className="num"),
                html.Td(f"{d['samples']:,}", className="num"),
            ]
        )
        for d in devices
    ]
    return html.Table(
        [html.Thead(html.Tr([html.Th(h) for h in head])), html.Tbody(rows)],
        className="data-table",
    )


def memory_panel(memory: JSON, id_prefix: str) -> html.Div:
    """Chart of allocated/reserved over time, then the peaks and fragmentation per device."""
    devices = memory.get("devices") or []
    children: list[Any] = [
        html.H2("GPU memory over time"),
        html.Div(
            "Fragmentation = (reserved - allocated) / reserved: memory the caching "
            "allocator holds that no tensor uses.",
            className="muted",
        ),
        dcc.Graph(id=f"{id_prefix}-chart", figure=memory_figure(memory), config=GRAPH_CONFIG),
    ]
    if devices:
        children.append(_peak_rows(devices))
    else:
        children.append(html.Div(memory.get("note") or "", className="empty-state"))
    return html.Div(html.Section(children, className="card"))
