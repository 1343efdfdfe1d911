"""The Nsight Compute sections card of the Roofline tab, as a pure builder from `/ncu` JSON.

One launch is shown at a time, chosen by the `ncu` URL query (a link per launch, so each
has its URL): its roofline point, Speed of Light bars, occupancy bars and block limits,
memory bytes, warp stalls, ncu's rule results with estimated speedups, and every section
as ncu's details page groups it.

Public surface: `ncu_panel`, `launch_of`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dash import dcc, html

from dashboard.components.status_badge import notice
from dashboard.components.trace_views import tab_href
from dashboard.figures.ncu import occupancy_figure, sol_figure, stalls_figure
from dashboard.format import (
    format_bandwidth,
    format_bytes,
    format_duration_ns,
    format_flop_rate,
    format_pct,
    format_value,
    shorten_kernel_name,
)

__all__ = ["launch_of", "ncu_panel"]

JSON = dict[str, Any]
GRAPH_CONFIG: dict[str, Any] = {"displaylogo": False, "responsive": True}
HIERARCHY_HEAD = ("Level", "Bytes", "Peak bandwidth", "Time at peak", "% of duration")
RULE_ORDER = {"OPT": 0, "WRN": 1, "ERR": 1, "INF": 2}


def launch_of(sections: Mapping[str, Any], name: str) -> int | None:
    """The ncu ID of the first launch of kernel `name` (a clicked roofline point).

    >>> launch_of({"kernels": [{"name": "a", "ncu_id": 0}, {"name": "b", "ncu_id": 1}]}, "b")
    1
    """
    return next((k.get("ncu_id") for k in sections.get("kernels") or [] if k["name"] == name),
                None)  # fmt: skip


def _selected(kernels: Sequence[JSON], wanted: str | None) -> JSON:
    by_id = {str(k.get("ncu_id")): k for k in kernels}
    return by_id.get(wanted or "", kernels[0])


def _launch_links(
    kernels: Sequence[JSON], chosen: JSON, trace_id: str, query: Mapping[str, str], prefix: str
) -> html.Ul:
    keep = {k: v for k, v in query.items() if k not in ("tab", "ncu")}
    items = []
    for k in kernels:
        label = f"ID {k.get('ncu_id')} · {shorten_kernel_name(k['name'], 70)}"
        label += f" · {format_duration_ns(k['duration_ns'])}"
        cls = "ncu-launch ncu-launch-active" if k is chosen else "ncu-launch"
        href = tab_href(trace_id, "roofline", **keep, ncu=str(k.get("ncu_id")))
        items.append(html.Li(dcc.Link(label, href=href, className=cls, title=k["name"])))
    return html.Ul(items, id=f"{prefix}-launches", className="ncu-launches")


def _point_line(kernel: JSON, points: Sequence[JSON]) -> html.P:
    point = next((p for p in points if p.get("name") == kernel["name"]), None)
    if point is None:
        return html.P("No roofline point for this kernel.", className="muted small")
    return html.P(
        f"Roofline point: {point['precision']} · {point['intensity']:.3g} FLOP/byte · "
        f"{format_flop_rate(point['flops_per_s'])} · {point.get('bound') or '?'}-bound "
        f"({point['count']} launch(es) of this name)",
        className="small",
    )


def _graph(figure: Any, id_: str) -> dcc.Graph:
    """The chart at its figure's own height (a responsive graph would fill 450 px)."""
    height = figure.layout.height or 200
    return dcc.Graph(id=id_, figure=figure, config=GRAPH_CONFIG, style={"height": f"{height}px"})  # type: ignore[arg-type]


def _table(head: Sequence[str], rows: Sequence[Sequence[Any]], id_: str = "") -> html.Table:
    body = [html.Tr([html.Td(c) for c in row]) for row in rows]
    parts = [html.Thead(html.Tr([html.Th(h) for h in head])), html.Tbody(body)]
    if id_:
        return html.Table(parts, className="ncu-table", id=id_)
    return html.Table(parts, className="ncu-table")


def _occupancy_block(kernel: JSON, prefix: str) -> html.Div:
    occ = kernel.get("occupancy") or {}
    limits = occ.get("block_limits") or []
    limiters = set(occ.get("limiters") or [])
    rows = [
        [b["label"] + (" ◀ limiter" if b["label"] in limiters else ""),
         f"{b['value']:g} blocks", html.Code(b["metric"])]
        for b in limits
    ]  # fmt: skip
    warps = (f"Warps per SM: theoretical {format_value(occ.get('theoretical_warps_per_sm'))}, "
             f"achieved {format_value(occ.get('achieved_warps_per_sm'))}; waves per SM "
             f"{format_value(occ.get('waves_per_sm'))}.")  # fmt: skip
    return html.Div(
        [
            html.H3("Occupancy"),
            _graph(occupancy_figure(kernel), f"{prefix}-occupancy"),
            html.P(warps, className="small"),
            _table(("Block limit", "Blocks per SM", "Metric"), rows, f"{prefix}-limits")
            if rows
            else html.P("No block limits in this CSV.", className="muted small"),
        ]
    )


def _memory_block(kernel: JSON, prefix: str) -> html.Div:
    rows = [
        [m["level"], format_bytes(m.get("read_bytes")), format_bytes(m.get("write_bytes")),
         format_bytes(m.get("total_bytes")), html.Code(", ".join(m["metrics"]))]
        for m in kernel.get("memory") or []
    ]  # fmt: skip
    body: Any = (
        _table(("Level", "Read", "Write", "Total", "Metrics"), rows, f"{prefix}-memory")
        if rows
        else html.P("No memory-chart bytes in this CSV.", className="muted small")
    )
    return html.Div([html.H3("Memory chart bytes"), body, _hierarchy_block(kernel, prefix)])


def _hierarchy_block(kernel: JSON, prefix: str) -> html.Div:
    """Hit rates and the hierarchical roofline's levels: bytes, time at peak, the bound."""
    h = kernel.get("hierarchy")
    if not h:
        return html.Div(html.P("No hit rates or level bytes in this CSV.", className="muted small"))
    hits = (f"L1/TEX hit rate {format_pct(h.get('l1_hit_pct'))}, "
            f"L2 hit rate {format_pct(h.get('l2_hit_pct'))}.")  # fmt: skip
    bound = h.get("bound_level")
    rows = [
        [lv["level"] + (" ◀ bound" if lv["level"] == bound else ""), format_bytes(lv.get("bytes")),
         format_bandwidth(lv.get("peak_bytes_per_s")), format_duration_ns(lv.get("time_ns")),
         format_pct(lv.get("pct_of_duration"))]
        for lv in h.get("levels") or []
    ]  # fmt: skip
    why = (
        f"Memory traffic bound by {bound}: its bytes take the longest at its peak bandwidth "
        "(the nearest roof of Nsight's hierarchical roofline; the roofline above says whether "
        "the kernel is memory-bound at all)."
        if bound
        else "No bound: the CSV lacks the levels' peaks (a raw page has them)."
    )
    return html.Div(
        [
            html.H3("Memory hierarchy"),
            html.P(hits, className="small", id=f"{prefix}-hits"),
            _table(HIERARCHY_HEAD, rows, f"{prefix}-hierarchy"),
            html.P(why, className="muted small"),
        ]
    )


def _rule_key(rule: JSON) -> tuple[int, float]:
    """Optimisation hints first, largest estimated speedup first, as ncu's summary lists them."""
    return RULE_ORDER.get(rule["type"], 3), -(rule.get("speedup_pct") or 0.0)


def _rules_block(kernel: JSON, prefix: str) -> html.Div:
    rules = sorted(kernel.get("rules") or [], key=_rule_key)
    if not rules:
        text = "No rule results (ncu prints them on the details page: --page details)."
        return html.Div([html.H3("Rule results"), html.P(text, className="muted small")])
    items = [
        html.Li(
            [
                html.Span(r["type"], className=f"ncu-rule ncu-rule-{r['type'].lower()}"),
                html.Strong(f" {r['name']}"),
                html.Span(f" · {r['section']}", className="muted"),
                html.Span(
                    f" · est. speedup {r['speedup_pct']:.1f}% ({r.get('speedup_type') or '?'})"
                    if r.get("speedup_pct") is not None else "",
                    className="ncu-speedup",
                ),
                html.Div(r["description"], className="small"),
            ]
        )
        for r in rules
    ]  # fmt: skip
    return html.Div([html.H3("Rule results"), html.Ul(items, id=f"{prefix}-rules",
                                                       className="ncu-rules")])  # fmt: skip


def _section_value(m: JSON) -> str:
    if m.get("value") is None:
        return str(m.get("text") or "")
    return f"{format_value(m['value'])} {m['unit']}".strip()


def _sections_block(kernel: JSON) -> html.Div:
    details = []
    for s in kernel.get("sections") or []:
        rows = [[m["name"], _section_value(m)] for m in s["metrics"]]
        body: list[Any] = [_table(("Metric", "Value"), rows)] if rows else []
        body += [html.P(f"{r['type']} {r['name']}: {r['description']}", className="small")
                 for r in s["rules"]]  # fmt: skip
        summary = f"{s['name']} ({len(rows)} metrics, {len(s['rules'])} rules)"
        details.append(html.Details([html.Summary(summary), *body], className="ncu-section"))
    if not details:
        return html.Div()
    return html.Div([html.H3("Sections, as ncu's details page groups them"), *details])


def ncu_panel(
    sections: JSON | None,
    points: Sequence[JSON],
    trace_id: str,
    query: Mapping[str, str],
    id_prefix: str,
) -> html.Section:
    """The card: launch list, then the chosen launch's blocks; a notice when there is none."""
    head = html.H2("Nsight Compute sections")
    if sections is None:
        return html.Section([head, notice("Could not load the Nsight Compute sections.",
                                          "error")], className="card")  # fmt: skip
    kernels = sections.get("kernels") or []
    if not kernels:
        return html.Section([head, notice(sections.get("note", ""), "info")], className="card")
    kernel = _selected(kernels, query.get("ncu"))
    stall_head = f"Warp stall reasons ({kernel.get('stall_unit') or 'none recorded'})"
    return html.Section(
        [
            head,
            html.P(sections.get("note", ""), className="muted small"),
            _launch_links(kernels, kernel, trace_id, query, id_prefix),
            html.H3(kernel["name"], className="ncu-kernel-name", id=f"{id_prefix}-kernel"),
            _point_line(kernel, points),
            html.Div(
                [
                    html.Div(
                        [
                            html.H3("GPU Speed Of Light"),
                            _graph(sol_figure(kernel), f"{id_prefix}-sol"),
                        ]
                    ),
                    _occupancy_block(kernel, id_prefix),
                    _memory_block(kernel, id_prefix),
                    html.Div(
                        [html.H3(stall_head), _graph(stalls_figure(kernel), f"{id_prefix}-stalls")]
                    ),
                ],
                className="ncu-grid",
            ),
            _rules_block(kernel, id_prefix),
            _sections_block(kernel),
        ],
        className="card",
        id=id_prefix,
    )
