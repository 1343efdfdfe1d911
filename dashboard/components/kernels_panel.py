"""The Kernels tab: top-10 chart, grouping and search controls, and a paged table.

The table pages, sorts and filters on the server (`/traces/{id}/kernels`); the page puts
the query in the URL, so a sorted, filtered view is a link. The grid holds one page; the
page buttons below it and a click on a header ask for another (`components.grid`). Cells
are plain text, so a kernel called `<script>` shows as typed.

Public surface: `kernels_panel`, `GROUPS`, `columns_for`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

from dash import dcc, html

from dashboard.api.traces import KernelStat
from dashboard.api.views import SORT_KEYS, KernelQuery
from dashboard.components.grid import GridColumn, data_grid
from dashboard.components.pager import pager
from dashboard.figures import kernel_top_figure
from dashboard.format import (
    format_bytes,
    format_count,
    format_duration_ns,
    format_pct,
    shorten_kernel_name,
)

__all__ = ["GROUPS", "columns_for", "kernels_panel"]

JSON = dict[str, Any]
GROUPS = (
    ("name", "Kernel name"),
    ("cpu_op", "CPU op that launched it"),
    ("stream", "Stream"),
    ("device", "Device"),
    ("rank", "Distributed rank"),
)
LABEL_KEYS = ("name", "key", "group")
# Row fields holding the full text of a shortened cell, shown as its tooltip.
FULL_TEXT = {"label": "label_full", "top_kernel": "top_kernel_full"}


def _dims(v: Any) -> str:
    return "x".join(str(x) for x in v) if isinstance(v, list) else str(v)


def _num(v: Any) -> str:
    return f"{v:,.0f}" if isinstance(v, int | float) else str(v)


# key -> (header, formatter); the table shows those the API returned, in this order.
KNOWN: dict[str, tuple[str, Callable[[Any], str]]] = {
    "count": ("Count", format_count),
    "kernels": ("Distinct kernels", format_count),
    "total_ns": ("Total", format_duration_ns),
    "mean_ns": ("Mean", format_duration_ns),
    "min_ns": ("Min", format_duration_ns),
    "max_ns": ("Max", format_duration_ns),
    "p50_ns": ("p50", format_duration_ns),
    "p95_ns": ("p95", format_duration_ns),
    "pct": ("% of kernel time", format_pct),
    "grid": ("Grid", _dims),
    "block": ("Block", _dims),
    "registers_per_thread": ("Registers", _num),
    "shared_memory_bytes": ("Shared mem", format_bytes),
    "occupancy_pct": ("Occupancy", format_pct),
    "top_kernel": ("Top kernel", lambda v: shorten_kernel_name(str(v), 50)),
}


def _label_key(items: Sequence[JSON]) -> str:
    first = items[0] if items else {}
    return next((k for k in LABEL_KEYS if k in first), "name")


def _column(field: str, header: str) -> GridColumn:
    return GridColumn(
        field,
        header,
        text=field in FULL_TEXT,
        sort=("asc" if field == "label" else "desc") if field in SORT_KEYS else None,
        tooltip_field=FULL_TEXT.get(field),
    )


def columns_for(items: Sequence[JSON], group: str = "name") -> list[GridColumn]:
    """Grid columns: the row's label, then every known statistic the API returned."""
    present = {k for item in items[:1] for k in item}
    title = "Kernel" if group == "name" else dict(GROUPS).get(group, group)
    return [_column("label", title)] + [_column(k, KNOWN[k][0]) for k in KNOWN if k in present]


def _label(value: Any, group: str) -> str:
    text = "—" if value in (None, "") else str(value)
    return shorten_kernel_name(text, 70) if group in ("name", "cpu_op") else text


def _rows(items: Sequence[JSON], group: str) -> list[JSON]:
    """Cells as formatted text, plus the full text of each shortened one for its tooltip."""
    key = _label_key(items)
    rows = []
    for item in items:
        row = {"label": _label(item.get(key), group)}
        row["label_full"] = "—" if item.get(key) in (None, "") else str(item.get(key))
        row |= {k: KNOWN[k][1](item[k]) for k in KNOWN if k in item and item[k] is not None}
        if item.get("top_kernel") is not None:
            row["top_kernel_full"] = str(item["top_kernel"])
        rows.append(row)
    return rows


def _controls(query: KernelQuery, id_prefix: str) -> html.Div:
    return html.Div(
        [
            html.Label("Group by", htmlFor=f"{id_prefix}-group", className="control-label"),
            dcc.Dropdown(
                id=f"{id_prefix}-group",
                options=[{"label": t, "value": v} for v, t in GROUPS],
                value=query.group,
                clearable=False,
                className="control-select",
            ),
            dcc.Input(
                id=f"{id_prefix}-search",
                type="search",
                value=query.q,
                placeholder="Search kernels (Enter)…",
                debounce=True,
                className="control-search",
            ),
        ],
        className="controls",
    )


def kernels_panel(
    page: JSON | None, top: Sequence[JSON], query: KernelQuery, id_prefix: str
) -> html.Div:
    """Chart of the top 10 (by name), then the table of everything in the current grouping."""
    if page is None:
        return html.Div("Could not load the kernels.", className="notice notice-error")
    items = page.get("items") or []
    if not items and not query.q and not page.get("total_kernel_ns"):
        return html.Div(
            "This trace has no GPU kernels: was ProfilerActivity.CUDA enabled?",
            className="empty-state",
            id=f"{id_prefix}-empty",
        )
    total = int(page.get("count") or len(items))
    pages = max(1, -(-total // query.page_size))
    columns = columns_for(items, query.group)
    table = data_grid(f"{id_prefix}-table", columns, _rows(items, query.group), query.sort)
    pages_nav = pager(min(query.page, pages - 1), pages, f"{id_prefix}-page")
    found = f"{format_count(total)} rows" + (f" matching “{query.q}”" if query.q else "")
    if not items and not query.q:
        found = f"No per-{query.group} stats are stored for this trace; re-ingest it to group."
    chart = dcc.Graph(
        id=f"{id_prefix}-top-chart",
        figure=kernel_top_figure(cast(list[KernelStat], list(top))),
        config={"displaylogo": False, "responsive": True},
    )
    return html.Div(
        [
            html.Section([html.H2("Top 10 kernels by total GPU time"), chart], className="card"),
            html.Section(
                [
                    html.H2("All kernels"),
                    _controls(query, id_prefix),
                    html.Div(found, className="muted", id=f"{id_prefix}-found"),
                    table,
                    pages_nav,
                ],
                className="card",
            ),
        ]
    )
