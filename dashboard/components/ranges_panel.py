"""The Ranges tab: NVTX / `record_function` ranges (`nsys stats --report nvtx_sum`), the
durations of the selected range, and the CUDA graphs section (graphs, then their replays).

Grids hold every row and sort in the browser. A click on a range row puts it in the URL
(`?tab=ranges&range=…&domain=…&side=…`, written by the page's callback from the row id),
so the chart below follows the URL like every other control of the trace page.

Public surface: `ranges_panel`, `range_key`, `parse_range_key`, `default_range`.
"""

from __future__ import annotations

import json
from typing import Any

from dash import dcc, html
from dash.development.base_component import Component
from dash_ag_grid import AgGrid

from dashboard.api.ranges import Graphs, GraphStat, RangeDurations, Ranges, RangeStat
from dashboard.components.grid import DURATION_NS, browser_grid
from dashboard.figures.ranges import graph_replays_figure, range_durations_figure
from dashboard.format import format_count, format_duration_ns, shorten_kernel_name

__all__ = ["default_range", "parse_range_key", "range_key", "ranges_panel"]

JSON = dict[str, Any]
Selected = tuple[str, str | None, str]  # (name, domain, side)


def range_key(name: str, domain: str | None, side: str) -> str:
    """A row's id: the range's identity as JSON text.

    >>> parse_range_key(range_key("fwd", None, "cpu"))
    ('fwd', None, 'cpu')
    """
    return json.dumps([name, domain, side])


def parse_range_key(key: str | None) -> Selected | None:
    """The (name, domain, side) of a row id, or None for anything else."""
    try:
        name, domain, side = json.loads(key or "")
    except (ValueError, TypeError):
        return None
    ok = isinstance(name, str) and (domain is None or isinstance(domain, str))
    return (name, domain, side) if ok and side in ("cpu", "gpu") else None


def default_range(items: list[RangeStat]) -> Selected | None:
    """The range to chart when none is chosen: the most time among those seen twice or more."""
    repeated = [i for i in items if i["count"] > 1] or items
    top = repeated[0] if repeated else None
    return (top["name"], top["domain"], top["side"]) if top else None


def label(selected: Selected) -> str:
    name, domain, side = selected
    text = f"{domain}:{name}" if domain else name
    return f"{text} (GPU)" if side == "gpu" else text


def _row(i: RangeStat) -> JSON:
    return {
        "key": range_key(i["name"], i["domain"], i["side"]),
        "name": i["name"], "domain": i["domain"] or "", "style": i["style"] or "",
        "side": i["side"].upper(), "count": i["count"], "time_pct": round(i["time_pct"], 1),
        "total": i["total_ns"], "avg": i["avg_ns"], "med": i["med_ns"],
        "min": i["min_ns"], "max": i["max_ns"], "std": i["std_ns"],
    }  # fmt: skip


def _num(field: str, header: str, tip: str | None = None) -> JSON:
    col = {"field": field, "headerName": header, "type": "numericColumn", "sortable": True,
           "cellClass": "grid-num", "width": 100, "wrapHeaderText": True,
           "autoHeaderHeight": True}  # fmt: skip
    return col | ({"headerTooltip": tip} if tip else {})


def _ns(field: str, header: str, tip: str | None = None) -> JSON:
    """A duration column: ns in the row (it sorts as a number), read by magnitude."""
    return _num(field, header, tip) | DURATION_NS


_RANGE_COLUMNS = [
    {"field": "name", "headerName": "RANGE", "sortable": True, "cellClass": "grid-text",
     "tooltipField": "name", "width": 220, "pinned": "left"},
    {"field": "domain", "headerName": "DOMAIN", "sortable": True, "width": 110},
    {"field": "style", "headerName": "STYLE", "sortable": True, "width": 100},
    {"field": "side", "headerName": "SIDE", "sortable": True, "width": 80,
     "headerTooltip": "CPU: the range as annotated; GPU: torch's gpu_user_annotation span"},
    _num("time_pct", "TIME %", "share of all ranges' total time on the same side"),
    _ns("total", "TOTAL"), _num("count", "INSTANCES"), _ns("avg", "AVG"),
    _ns("med", "MED"), _ns("min", "MIN"), _ns("max", "MAX"),
    _ns("std", "STDDEV", "sample standard deviation (n - 1), as nsys"),
]  # fmt: skip


def _used(columns: list[JSON], rows: list[JSON], optional: tuple[str, ...]) -> list[JSON]:
    """The columns, less the optional ones that are empty in every row (torch ranges have
    no domain or style; most traces have one side), so the numbers fit the page."""
    empty = {f for f in optional if not any(r[f] not in ("", None) for r in rows)}
    return [c for c in columns if c["field"] not in empty]


def _ranges_grid(items: list[RangeStat], id_prefix: str) -> AgGrid:
    rows = [_row(i) for i in items]
    if all(i["side"] == "cpu" for i in items):
        rows = [r | {"side": ""} for r in rows]
    columns = _used(_RANGE_COLUMNS, rows, ("domain", "style", "side"))
    grid = browser_grid(f"{id_prefix}-grid", columns, rows, "ranges.csv")
    grid.getRowId = "params.data.key"
    grid.dashGridOptions = {**grid.dashGridOptions, "rowClass": "grid-clickable"}
    return grid


def _ranges_section(
    ranges: Ranges, selected: Selected | None, durations: RangeDurations | None, id_prefix: str
) -> Component:
    items = ranges["items"]
    if not items:
        return html.Section([html.H3("Ranges"), html.P(ranges["note"], className="muted")],
                            className="card")  # fmt: skip
    intro = (
        f"{format_count(ranges['total'])} range name{'s' if ranges['total'] != 1 else ''}, "
        "as nsys stats --report nvtx_sum "
        "(NVTX push/pop and start/end ranges; torch record_function ranges). "
        "Click a row to chart its durations."
    )
    chart: Component = html.P("Could not load this range's durations.", className="muted")
    if selected and durations is not None:
        chart = dcc.Graph(
            figure=range_durations_figure(dict(durations), label(selected)),
            id=f"{id_prefix}-durations", config={"displaylogo": False},
        )  # fmt: skip
    return html.Section(
        [html.H3("Ranges"), html.P(intro, className="muted"), _ranges_grid(items, id_prefix),
         chart],
        className="card",
    )  # fmt: skip


def _graph_row(g: GraphStat) -> JSON:
    top = shorten_kernel_name(g["top_kernels"][0]["name"]) if g["top_kernels"] else ""
    return {
        "graph": g["graph"], "graph_id": "" if g["graph_id"] is None else g["graph_id"],
        "launches": g["launches"], "kernels": round(g["kernels_per_replay"], 1),
        "nodes": round(g["nodes_per_replay"], 1), "gpu_avg": g["gpu_ns_avg"],
        "span_avg": g["span_ns_avg"], "span_min": g["span_ns_min"],
        "span_max": g["span_ns_max"], "gpu_total": g["gpu_ns_total"], "top": top,
    }  # fmt: skip


_GRAPH_COLUMNS = [
    _num("graph", "GRAPH"), _num("graph_id", "GRAPH ID", "the profiler's own id, if recorded"),
    _num("launches", "REPLAYS"), _num("kernels", "KERNELS / REPLAY"),
    _num("nodes", "GPU OPS / REPLAY", "kernels, copies and memsets"),
    _ns("gpu_avg", "GPU TIME AVG"), _ns("span_avg", "SPAN AVG"),
    _ns("span_min", "SPAN MIN"), _ns("span_max", "SPAN MAX"),
    _ns("gpu_total", "GPU TIME TOTAL"),
    {"field": "top", "headerName": "TOP KERNEL", "cellClass": "grid-text",
     "tooltipField": "top", "width": 360},
]  # fmt: skip

_REPLAY_COLUMNS = [
    _num("graph", "GRAPH"), _num("replay", "REPLAY"),
    _ns("at", "GPU START", "since the first replay's GPU start"),
    _ns("span", "SPAN"), _ns("gpu", "GPU TIME"), _num("kernels", "KERNELS"),
    _num("nodes", "GPU OPS"), _num("correlation", "CORR. ID"),
    {"field": "top", "headerName": "TOP KERNELS", "cellClass": "grid-text",
     "tooltipField": "top", "width": 420},
]  # fmt: skip


def _replay_rows(graphs: list[GraphStat]) -> list[JSON]:
    t0 = min((r["start_ns"] for g in graphs for r in g["replays"]), default=0)
    return [
        {"graph": g["graph"], "replay": n, "at": r["start_ns"] - t0,
         "span": r["span_ns"], "gpu": r["gpu_ns"], "kernels": r["kernels"],
         "nodes": r["nodes"], "correlation": r["correlation"],
         "top": " · ".join(f"{shorten_kernel_name(k['name'])} "
                           f"({format_duration_ns(k['total_ns'])})"
                           for k in r["top_kernels"])}
        for g in graphs for n, r in enumerate(g["replays"], 1)
    ]  # fmt: skip


def _graphs_section(graphs: Graphs | None, id_prefix: str) -> Component:
    title = html.H3("CUDA graphs")
    if graphs is None:
        return html.Section([title, html.P("Could not load the CUDA graphs.", className="muted")],
                            className="card")  # fmt: skip
    found = graphs["graphs"]
    rows = [_graph_row(g) for g in found]
    lost = graphs["unattributed_nodes"]
    if not found:
        text = graphs["note"] or f"{lost} GPU ops carry a graph node id, but no launch was traced."
        return html.Section([title, html.P(text, className="muted")], className="card",
                            id=f"{id_prefix}-graphs")  # fmt: skip
    intro = (
        f"{len(found)} graph{'s' if len(found) != 1 else ''}, "
        f"{format_count(graphs['launches'])} cudaGraphLaunch calls; each replay's GPU work is "
        "linked to its launch by correlation id. Span: first start to last end on the GPU."
        + (f" {lost} GPU ops with a graph node id had no traced launch." if lost else "")
    )
    return html.Section(
        [title, html.P(intro, className="muted"),
         browser_grid(f"{id_prefix}-graph-grid", _used(_GRAPH_COLUMNS, rows, ("graph_id",)),
                      rows, "graphs.csv"),
         dcc.Graph(figure=graph_replays_figure([dict(g) for g in found]),
                   id=f"{id_prefix}-replays-chart", config={"displaylogo": False}),
         browser_grid(f"{id_prefix}-replay-grid", _REPLAY_COLUMNS, _replay_rows(found),
                      "graph_replays.csv")],
        className="card", id=f"{id_prefix}-graphs",
    )  # fmt: skip


def ranges_panel(
    ranges: Ranges | None,
    selected: Selected | None,
    durations: RangeDurations | None,
    graphs: Graphs | None,
    id_prefix: str,
) -> html.Div:
    """The tab: the ranges table and chart, then the CUDA graphs section."""
    top: Component
    if ranges is None:
        failed = html.P("Could not load the ranges.", className="muted")
        top = html.Section([html.H3("Ranges"), failed], className="card")
    else:
        top = _ranges_section(ranges, selected, durations, id_prefix)
    return html.Div([top, _graphs_section(graphs, id_prefix)], className="ranges-tab")
