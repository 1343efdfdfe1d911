"""The Steps and Ranks tabs, as pure builders from the API's JSON.

Steps: the spread tiles, a stacked bar per step (and rank) and the per-step table, the
slowest step marked. Ranks: stragglers, a stacked bar and table per rank, the collectives
table, and the summary's collective and copy figures (bytes, copy bandwidth by kind,
pinned against pageable), which were only in `/summary` before.

Public surface: `steps_panel`, `ranks_panel`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dash import dcc, html
from dash.dcc import Graph

from dashboard.components.grid import GridColumn, data_grid
from dashboard.components.status_badge import notice
from dashboard.components.trace_views import kpi, kpi_grid, tab_href
from dashboard.figures.steps import rank_figure, step_figure, unit_label
from dashboard.format import (
    format_bandwidth,
    format_bytes,
    format_count,
    format_duration_ns,
    format_pct,
)

__all__ = ["ranks_panel", "steps_panel"]

JSON = dict[str, Any]
GRAPH_CONFIG: Graph.Config = {"displaylogo": False, "responsive": True}
SPLIT = ("compute_ns", "communication_ns", "memcpy_ns", "memset_ns", "idle_ns")
_SPLIT_COLUMNS = [
    GridColumn("span", "span"), GridColumn("compute", "compute"),
    GridColumn("communication", "comm"), GridColumn("memcpy", "memcpy"),
    GridColumn("memset", "memset"), GridColumn("idle", "idle"), GridColumn("idle_pct", "idle %"),
]  # fmt: skip


def _split_cells(row: JSON) -> JSON:
    cells = {k.removesuffix("_ns"): format_duration_ns(row[k]) for k in SPLIT}
    cells["span"] = format_duration_ns(row["span_ns"])
    cells["idle_pct"] = format_pct(100.0 * row["idle_ns"] / row["span_ns"] if row["span_ns"]
                                   else None)  # fmt: skip
    return cells


def _spread_tiles(spread: JSON, id_prefix: str) -> html.Div:
    ratio = spread.get("max_over_min")
    return kpi_grid(
        [
            kpi("Steps", format_count(spread["count"]), "step numbers seen on any rank"),
            kpi("Step time p50", format_duration_ns(spread["p50_ns"]),
                "median of the step times (a step's time: its longest window over ranks)"),
            kpi("Step time p95", format_duration_ns(spread["p95_ns"]), "nearest-rank p95"),
            kpi("Min / max", f"{format_duration_ns(spread['min_ns'])} / "
                f"{format_duration_ns(spread['max_ns'])}",
                note=f"max/min {ratio:.2f}x" if ratio else None),
            kpi("Slowest step", str(spread["slowest_step"]), "the longest step time"),
        ],
        f"{id_prefix}-spread",
    )  # fmt: skip


def _window_links(trace_id: str, window: str, id_prefix: str) -> html.Div:
    """CPU ranges or GPU extents as a step's window; each choice is a URL."""
    links: list[Any] = ["Step window: "]
    for key, label in (("cpu", "CPU range"), ("gpu", "GPU extent of its work")):
        cls = "tab-link tab-active" if key == window else "tab-link"
        href = tab_href(trace_id, "steps", window="" if key == "cpu" else key)
        links.append(dcc.Link(label, href=href, className=cls, id=f"{id_prefix}-window-{key}"))
    return html.Div(links, className="muted")


def steps_panel(breakdown: JSON, trace_id: str, id_prefix: str) -> html.Div:
    """The Steps tab: window choice, spread, stacked chart, table."""
    rows: Sequence[JSON] = breakdown.get("items") or []
    if not rows:
        return html.Div(
            notice("This trace has no steps: no ProfilerStep, and no repeated top-level "
                   "annotation the step rule accepts. Choose a step marker on the Timeline.",
                   "info", f"{id_prefix}-none"),
            id=id_prefix,
        )  # fmt: skip
    source = breakdown.get("marker_source") or ""
    table = [
        {"step": str(r["step"]) + (" ★ slowest" if r["slowest"] else ""),
         "unit": unit_label(r), **_split_cells(r)}
        for r in rows
    ]  # fmt: skip
    columns = [GridColumn("step", "step", text=True, width=140),
               GridColumn("unit", "rank", text=True, width=110), *_SPLIT_COLUMNS]  # fmt: skip
    return html.Div(
        [
            _window_links(trace_id, breakdown.get("window") or "cpu", id_prefix),
            _spread_tiles(breakdown["spread"], id_prefix),
            html.P(
                f"Steps marked by {breakdown.get('marker')} ({source}). "
                f"Rule: {breakdown.get('rule', '')}.",
                className="muted",
            ),
            dcc.Graph(id=f"{id_prefix}-chart", figure=step_figure(rows), config=GRAPH_CONFIG),
            data_grid(f"{id_prefix}-table", columns, table),
        ],
        id=id_prefix,
    )


def _stragglers(ranks: JSON, id_prefix: str) -> html.Div:
    found = ranks.get("stragglers") or []
    if len(ranks.get("items") or []) < 2:
        return notice(
            "Single-rank trace: there is nothing to compare across ranks. Upload every "
            "rank's file of a job together (one archive) to see stragglers and waits.",
            "info", f"{id_prefix}-single",
        )  # fmt: skip
    if not found:
        return notice(f"No straggler. Rule: {ranks.get('rule', '')}.", "success",
                      f"{id_prefix}-stragglers")  # fmt: skip
    return html.Div([notice(s["message"], "warning") for s in found],
                    id=f"{id_prefix}-stragglers")  # fmt: skip


def _rank_table(ranks: JSON, id_prefix: str) -> Any:
    rows = [
        {"unit": unit_label(r), **_split_cells(r),
         "overlap": format_pct(r.get("comm_compute_overlap_pct")),
         "wait": format_duration_ns(r["collective_wait_ns"])}
        for r in ranks.get("items") or []
    ]  # fmt: skip
    columns = [
        GridColumn("unit", "rank", text=True, width=110), *_SPLIT_COLUMNS,
        GridColumn("overlap", "overlap"), GridColumn("wait", "wait"),
    ]  # fmt: skip
    return data_grid(f"{id_prefix}-table", columns, rows)


def _collective_table(collectives: JSON, id_prefix: str) -> Any:
    items = collectives.get("items") or []
    if not items:
        return notice("No collective kernels (NCCL/RCCL) in this trace.", "info",
                      f"{id_prefix}-collectives")  # fmt: skip
    rows = [
        {"collective": " · ".join(x for x in (c["collective"], c.get("dtype"), "/".join(
             y for y in (c.get("algorithm"), c.get("protocol")) if y)) if x),
         "size": _size(c.get("msg_bytes")), "count": format_count(c["count"]),
         "ranks": str(c["ranks"]), "total": format_duration_ns(c["total_ns"]),
         "avg": format_duration_ns(c["avg_ns"]),
         "algbw": format_bandwidth(_gbps(c.get("algbw_gbps"))),
         "busbw": format_bandwidth(_gbps(c.get("busbw_gbps"))),
         "wait": format_duration_ns(c["wait_ns"])}
        for c in items
    ]  # fmt: skip
    columns = [
        GridColumn("collective", "collective · dtype · algorithm", text=True, width=290),
        GridColumn("size", "message"), GridColumn("count", "count"), GridColumn("ranks", "ranks"),
        GridColumn("total", "total"), GridColumn("avg", "avg"), GridColumn("algbw", "algbw"),
        GridColumn("busbw", "busbw"), GridColumn("wait", "wait"),
    ]  # fmt: skip
    note = (f"{collectives.get('matched_instances', 0)} instances matched across ranks, "
            f"{collectives.get('unmatched_kernels', 0)} kernels without peers. "
            f"Rule: {collectives.get('rule', '')}.")  # fmt: skip
    return html.Div([data_grid(f"{id_prefix}-collectives", columns, rows),
                     html.P(note, className="muted")])  # fmt: skip


def _size(n: int | None) -> str:
    """Exact bytes (`16,793,600 B`): two sizes that round alike stay apart."""
    return "—" if n is None else f"{format_count(n)} B"


def _gbps(value: float | None) -> float | None:
    return None if value is None else value * 1e9


def _summary_figures(summary: JSON | None, id_prefix: str) -> html.Div:
    """The summary's communication bytes and copies by kind, as ingest computed them."""
    comm = (summary or {}).get("communication") or {}
    transfers = (summary or {}).get("transfers") or {}
    coll = [
        html.Li(f"{c['collective']}: {format_count(c['count'])} kernels, "
                f"{format_duration_ns(c['total_ns'])}, {format_bytes(c.get('bytes'))} "
                f"(largest message {format_bytes(c.get('max_msg_bytes'))})")
        for c in comm.get("collectives") or []
    ]  # fmt: skip
    kinds = [
        {"op": k["op"], "kind": k["kind"], "src_dst": f"{k['src']} → {k['dst']}",
         "count": format_count(k["count"]), "bytes": format_bytes(k["bytes"]),
         "time": format_duration_ns(k["total_ns"]),
         "bw": format_bandwidth(_gbps(k.get("bandwidth_gbps")))}
        for k in transfers.get("kinds") or []
    ]  # fmt: skip
    columns = [
        GridColumn("op", "op", text=True, width=90), GridColumn("kind", "kind", text=True,
                                                                width=90),
        GridColumn("src_dst", "host memory", text=True, width=170), GridColumn("count", "count"),
        GridColumn("bytes", "bytes"), GridColumn("time", "time"), GridColumn("bw", "bandwidth"),
    ]  # fmt: skip
    tiles = kpi_grid(
        [
            kpi("H2D / D2H / D2D", f"{format_bytes(transfers.get('h2d_bytes'))} / "
                f"{format_bytes(transfers.get('d2h_bytes'))} / "
                f"{format_bytes(transfers.get('d2d_bytes'))}", "bytes copied by direction"),
            kpi("Pinned / pageable", f"{format_pct(transfers.get('pinned_pct'))} / "
                f"{format_pct(transfers.get('pageable_pct'))}",
                "share of H2D+D2H bytes whose host memory was pinned / pageable"),
            kpi("Pageable H2D", format_pct(transfers.get("h2d_pageable_pct")),
                "share of H2D bytes from pageable memory (copies that cannot run async)"),
        ],
        f"{id_prefix}-copy-tiles",
    )  # fmt: skip
    return html.Div(
        [
            html.H3("Collective bytes (summary)"),
            html.Ul(coll) if coll else html.P("No collectives.", className="muted"),
            html.H3("Copies by kind (summary)"),
            tiles,
            data_grid(f"{id_prefix}-copies", columns, kinds) if kinds
            else html.P("No memcpy or memset.", className="muted"),
        ],
        id=f"{id_prefix}-summary",
    )  # fmt: skip


def ranks_panel(
    ranks: JSON, collectives: JSON | None, summary: JSON | None, id_prefix: str
) -> html.Div:
    """The Ranks tab: stragglers, the per-rank split, collectives, copies."""
    items = ranks.get("items") or []
    return html.Div(
        [
            _stragglers(ranks, id_prefix),
            dcc.Graph(id=f"{id_prefix}-chart", figure=rank_figure(items), config=GRAPH_CONFIG),
            _rank_table(ranks, id_prefix),
            html.H3("Collectives"),
            _collective_table(collectives or {}, id_prefix),
            _summary_figures(summary, id_prefix),
        ],
        id=id_prefix,
    )
