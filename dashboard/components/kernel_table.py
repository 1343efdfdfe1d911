"""The top kernels as a table: short names with the full name as a tooltip."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dash import html

from dashboard.api.traces import KernelStat
from dashboard.format import format_count, format_duration_ns, format_pct, shorten_kernel_name

COLUMNS = ("#", "Kernel", "Count", "Total", "Mean", "Min", "Max", "% of kernel time")


def _pct_cell(pct: float, top_pct: float) -> html.Td:
    """The share with a faint bar behind it, scaled like the chart's bars."""
    width = max(0.0, min(100.0, pct / top_pct * 100.0)) if top_pct > 0 else 0.0
    style = {"background": f"linear-gradient(90deg, #dbe4ff {width}%, transparent {width}%)"}
    return html.Td(format_pct(pct), className="num pct", style=style)


def _row(rank: int, k: KernelStat, top_pct: float) -> html.Tr:
    return html.Tr(
        [
            html.Td(str(rank), className="num muted"),
            html.Td(shorten_kernel_name(k["name"]), title=k["name"], className="kernel-name"),
            html.Td(format_count(k["count"]), className="num"),
            html.Td(format_duration_ns(k["total_ns"]), className="num"),
            html.Td(format_duration_ns(k["mean_ns"]), className="num"),
            html.Td(format_duration_ns(k["min_ns"]), className="num"),
            html.Td(format_duration_ns(k["max_ns"]), className="num"),
            _pct_cell(k["pct"], top_pct),
        ]
    )


def kernel_table(items: Sequence[KernelStat], table_id: str | None = None) -> html.Table:
    """Rows in the API's order (largest total first)."""
    attrs: dict[str, Any] = {"id": table_id} if table_id else {}
    top_pct = max((k["pct"] for k in items), default=0.0)
    return html.Table(
        [
            html.Thead(html.Tr([html.Th(c) for c in COLUMNS])),
            html.Tbody([_row(i, k, top_pct) for i, k in enumerate(items, start=1)]),
        ],
        className="data-table kernel-table",
        **attrs,
    )
