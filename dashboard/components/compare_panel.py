"""The comparison's body: headline deltas, kernel deltas, new/gone kernels, Markdown.

Public surface: `compare_panel`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dash import dcc, html
from dash.dcc import Graph

from dashboard.figures.compare import kernel_delta_figure
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


def _kernel_rows(deltas: Sequence[JSON], element_id: str) -> html.Table:
    head = ("Kernel", "Count A", "Count B", "Total A", "Total B", "Δ", "Δ %")
    rows = [
        html.Tr(
            [
                html.Td(shorten_kernel_name(d["name"]), title=d["name"], className="kernel-name"),
                html.Td(format_count(d["count_a"]), className="num"),
                html.Td(format_count(d["count_b"]), className="num"),
                html.Td(format_duration_ns(d["total_ns_a"]), className="num"),
                html.Td(format_duration_ns(d["total_ns_b"]), className="num"),
                html.Td(format_duration_ns(d["delta_ns"]), className="num"),
                html.Td(
                    "—" if d["delta_pct"] is None else f"{d['delta_pct']:+.1f}%", className="num"
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


def compare_panel(result: JSON, id_prefix: str) -> html.Div:
    """Everything below the pickers, for one A/B result."""
    changed = result.get("kernels") or []
    new, gone = result.get("new_kernels") or [], result.get("gone_kernels") or []
    markdown = result.get("markdown", "")
    return html.Div(
        [
            _section("Headline", _metrics(result.get("metrics") or [])),
            _section(
                "Kernel time deltas (B minus A)",
                dcc.Graph(
                    id=f"{id_prefix}-delta-chart",
                    figure=kernel_delta_figure([*changed, *new, *gone]),
                    config=GRAPH_CONFIG,
                ),
                _kernel_rows(changed, f"{id_prefix}-kernels"),
            ),
            _section(f"New kernels (only in B): {len(new)}", _kernel_rows(new, f"{id_prefix}-new")),
            _section(
                f"Gone kernels (only in A): {len(gone)}", _kernel_rows(gone, f"{id_prefix}-gone")
            ),
            _section(
                "Report (Markdown)",
                dcc.Clipboard(target_id=f"{id_prefix}-markdown", title="Copy", className="copy"),
                html.Pre(markdown, id=f"{id_prefix}-markdown", className="compare-markdown"),
            ),
        ]
    )
