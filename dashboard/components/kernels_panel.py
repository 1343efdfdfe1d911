"""The Kernels tab: top-10 chart, grouping and search controls, and a paged table.

The table pages, sorts and filters on the server (`/traces/{id}/kernels`); the page puts
the query in the URL, so a sorted, filtered view is a link. Cells are plain text
(DataTable never renders HTML from data), so a kernel called `<script>` shows as typed.

Public surface: `kernels_panel`, `GROUPS`, `columns_for`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

from dash import dcc, html
from dash.dash_table.DataTable import DataTable

from dashboard.api.client import KernelStat
from dashboard.api.views import KernelQuery
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


def columns_for(items: Sequence[JSON], group: str = "name") -> list[JSON]:
    """DataTable columns: the row's label, then every known statistic the API returned."""
    present = {k for item in items[:1] for k in item}
    title = "Kernel" if group == "name" else dict(GROUPS).get(group, group)
    cols = [{"name": title, "id": "label"}]
    return cols + [{"name": KNOWN[k][0], "id": k} for k in KNOWN if k in present]


def _label(value: Any, group: str) -> str:
    text = "—" if value in (None, "") else str(value)
    return shorten_kernel_name(text, 70) if group in ("name", "cpu_op") else text


def _rows(items: Sequence[JSON], group: str) -> tuple[list[JSON], list[JSON]]:
    key = _label_key(items)
    rows, tips = [], []
    for item in items:
        full = "—" if item.get(key) in (None, "") else str(item.get(key))
        row = {"label": _label(item.get(key), group)}
        row |= {k: KNOWN[k][1](item[k]) for k in KNOWN if k in item and item[k] is not None}
        rows.append(row)
        tips.append({"label": {"value": full, "type": "text"}})
    return rows, tips


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
    rows, tips = _rows(items, query.group)
    total = int(page.get("count") or len(items))
    pages = max(1, -(-total // query.page_size))
    # Column, row and tooltip shapes are plain JSON here; DataTable's stubs want narrower types.
    data: dict[str, Any] = {
        "columns": columns_for(items, query.group),
        "data": rows,
        "tooltip_data": tips,
    }
    table = DataTable(
        id=f"{id_prefix}-table",
        **data,
        tooltip_duration=None,
        page_action="custom",
        page_current=min(query.page, pages - 1),
        page_size=query.page_size,
        page_count=pages,
        sort_action="custom",
        sort_mode="single",
        sort_by=[
            {"column_id": query.sort, "direction": "asc" if query.sort == "label" else "desc"}
        ],
        style_as_list_view=True,
        style_table={"overflowX": "auto"},
        style_cell={
            "fontFamily": "inherit",
            "fontSize": 13,
            "padding": "6px 10px",
            "textAlign": "right",
            "whiteSpace": "nowrap",
        },
        style_cell_conditional=[
            {
                "if": {"column_id": "label"},
                "textAlign": "left",
                "fontFamily": "var(--mono)",
                "maxWidth": 380,
                "overflow": "hidden",
                "textOverflow": "ellipsis",
            }
        ],
        style_header={"fontWeight": 600, "backgroundColor": "#f8f9fa"},
    )
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
                ],
                className="card",
            ),
        ]
    )
