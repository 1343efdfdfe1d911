"""The comparison's body: the biggest changes, metrics, category and kernel deltas, Markdown.

Every kernel and category number is in the comparison's basis (time per step, or shares
when a trace has no steps), which the panel states above them. The headline lists the
`headline` rows of the API, whose deltas are the very bars of the two charts below it.

Public surface: `compare_panel`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dash import dcc, html
from dash.dcc import Graph

from dashboard.figures.compare import category_delta_figure, kernel_delta_figure, kernel_label
from dashboard.format import (
    format_bytes,
    format_count,
    format_duration_ns,
    format_pct,
    shorten_kernel_name,
)

__all__ = ["compare_panel"]

JSON = dict[str, Any]
GRAPH_CONFIG: Graph.Config = {"displaylogo": False, "responsive": True}
LOWER_IS_BETTER = frozenset({"ns", "bytes"}) | {"gpu_idle_pct"}
MAX_ROWS = 50
MATCHED_BY = {"exact": "same name", "name": "name w/o template args", "op": "launching op"}
STATUS = {"new": " (new in B)", "gone": " (gone from B)"}


def _value(m: JSON, v: float | None) -> str:
    if v is None:
        return "—"
    if m["unit"] == "ns":
        return format_duration_ns(v)
    if m["unit"] == "bytes":
        return format_bytes(v)
    if m["unit"] == "%":
        return format_pct(v)
    return f"{v:,.0f} {m['unit']}"


def _signed_duration(ns: float) -> str:
    return ("+" if ns > 0 else "-" if ns < 0 else "") + format_duration_ns(abs(ns))


def _basis_value(v: float | None, share: bool) -> str:
    if v is None:
        return "—"
    return f"{v:.2f}%" if share else format_duration_ns(v)


def _basis_delta(v: float, share: bool) -> str:
    return f"{v:+.2f} points" if share else _signed_duration(v)


def _tone(better: bool | None) -> str:
    return "" if better is None else "delta-better" if better else "delta-worse"


def _delta_cell(m: JSON) -> html.Td:
    if m.get("delta") is None:
        return html.Td("—", className="num")
    if m["unit"] == "%":
        text = f"{m['delta']:+.1f} points"
    else:
        text = "no change" if m.get("delta_pct") is None else f"{m['delta_pct']:+.1f}%"
    lower_better = m["unit"] in LOWER_IS_BETTER or m["metric"] in LOWER_IS_BETTER
    better = (m["delta"] < 0) == lower_better
    cls = "" if not m["delta"] else "delta-better" if better else "delta-worse"
    return html.Td(text, className=f"num {cls}")


def _metrics(metrics: Sequence[JSON]) -> html.Table:
    head = html.Thead(html.Tr([html.Th(h) for h in ("Metric", "A", "B", "Change")]))
    rows = [
        html.Tr(
            [
                html.Td(m["label"]),
                html.Td(_value(m, m.get("a")), className="num"),
                html.Td(_value(m, m.get("b")), className="num"),
                _delta_cell(m),
            ]
        )
        for m in metrics
    ]
    return html.Table([head, html.Tbody(rows)], className="data-table", id="compare-metrics")


def _headline(items: Sequence[JSON], share: bool, element_id: str) -> html.Ol | html.P:
    if not items:
        return html.P("Nothing changed.", className="muted", id=element_id)
    lines = []
    for h in items:
        kernel, op = h["kind"] == "kernel", h.get("match") == "op"
        what = ("Kernels launched by " if op else "Kernel ") if kernel else ""
        label = shorten_kernel_name(h["label"]) if kernel and not op else h["label"]
        status = STATUS.get(h.get("status") or "", "")
        per = f" of {h['unit'].removeprefix('% of ')}" if share else " per step"
        pct = "" if h["delta_pct"] is None else f", {h['delta_pct']:+.1f}%"
        lines.append(
            html.Li(
                [
                    what,
                    html.Span(label, title=h["label"], className="kernel-name" if kernel else ""),
                    status,
                    f": {_basis_value(h['a'], share)} → {_basis_value(h['b'], share)}{per} ",
                    html.Span(
                        f"({_basis_delta(h['delta'], share)}{pct})", className=_tone(h["better"])
                    ),
                ]
            )
        )
    return html.Ol(lines, id=element_id, className="compare-headline")


def _kernel_rows(deltas: Sequence[JSON], share: bool, element_id: str) -> html.Table:
    col = "share" if share else "per step"
    head = ("Kernel", "Matched by", f"A {col}", f"B {col}", "Δ", "Δ %", "Launches A / B")
    rows = [
        html.Tr(
            [
                html.Td(
                    kernel_label(d),
                    className="kernel-name",
                    title="\n".join(
                        ["A: " + n for n in d["names_a"]] + ["B: " + n for n in d["names_b"]]
                    ),
                ),
                html.Td(MATCHED_BY.get(d["match"], "—")),
                html.Td(_basis_value(d["a"] if d["names_a"] else None, share), className="num"),
                html.Td(_basis_value(d["b"] if d["names_b"] else None, share), className="num"),
                html.Td(_basis_delta(d["delta"], share), className=f"num {_tone(d['better'])}"),
                html.Td(
                    "—" if d["delta_pct"] is None else f"{d['delta_pct']:+.1f}%", className="num"
                ),
                html.Td(
                    f"{format_count(d['count_a'])} / {format_count(d['count_b'])}",
                    className="num",
                    title="Launches in the whole trace",
                ),
            ]
        )
        for d in deltas[:MAX_ROWS]
    ]
    return html.Table(
        [html.Thead(html.Tr([html.Th(h) for h in head])), html.Tbody(rows)],
        className="data-table kernel-table",
        id=element_id,
    )


def _section(title: str, *children: Any) -> html.Section:
    return html.Section([html.H2(title), *children], className="card")


def _chart(element_id: str, figure: Any) -> dcc.Graph:
    return dcc.Graph(id=element_id, figure=figure, config=GRAPH_CONFIG)


def compare_panel(result: JSON, id_prefix: str) -> html.Div:
    """Everything below the pickers, for one A/B result."""
    basis = result.get("basis", "share")
    share = basis == "share"
    changed = result.get("kernels") or []
    new, gone = result.get("new_kernels") or [], result.get("gone_kernels") or []
    per = "shares" if share else "per step"
    return html.Div(
        [
            _section(
                "Biggest changes",
                html.P(result.get("basis_note", ""), id=f"{id_prefix}-basis", className="muted"),
                _headline(result.get("headline") or [], share, f"{id_prefix}-headline"),
            ),
            _section("Metrics", _metrics(result.get("metrics") or [])),
            _section(
                f"Time categories and overlap (B minus A, {per})",
                _chart(
                    f"{id_prefix}-category-chart",
                    category_delta_figure(result.get("categories") or [], basis),
                ),
            ),
            _section(
                f"Kernel deltas (B minus A, {per})",
                _chart(
                    f"{id_prefix}-delta-chart", kernel_delta_figure([*changed, *new, *gone], basis)
                ),
                _kernel_rows(changed, share, f"{id_prefix}-kernels"),
            ),
            _section(
                f"New kernels (only in B): {len(new)}", _kernel_rows(new, share, f"{id_prefix}-new")
            ),
            _section(
                f"Gone kernels (only in A): {len(gone)}",
                _kernel_rows(gone, share, f"{id_prefix}-gone"),
            ),
            _section(
                "Report (Markdown)",
                dcc.Clipboard(target_id=f"{id_prefix}-markdown", title="Copy", className="copy"),
                html.Pre(
                    result.get("markdown", ""),
                    id=f"{id_prefix}-markdown",
                    className="compare-markdown",
                ),
            ),
        ]
    )
