"""The shared grid and pager builders: plain-text cells, server-side sort and paging."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from dash import html

from dashboard.api.views import SORT_KEYS, KernelQuery
from dashboard.components.grid import GridColumn, data_grid, sorted_column
from dashboard.components.kernels_panel import kernels_panel
from dashboard.components.pager import pager
from dashboard.format import shorten_kernel_name

HOSTILE = "<img src=x onerror=alert(1)>"
LONG = "void at::native::vectorized_elementwise_kernel<4, " + "Functor<float>, " * 12 + "int>"


def _page(*names: str, count: int = 0) -> dict[str, Any]:
    items = [
        {"name": n, "count": 3, "total_ns": 1500, "mean_ns": 500, "pct": 50.0, "grid": [4, 1, 1]}
        for n in names
    ]
    return {"items": items, "count": count or len(items), "total_kernel_ns": 3000}


def _grid(panel: html.Div) -> Any:
    return panel.children[1].children[-2]


def test_columns_sort_only_as_the_api_does_and_show_the_current_sort() -> None:
    columns = [
        GridColumn("label", "Kernel", text=True, sort="asc"),
        GridColumn("count", "Count", sort="desc"),
        GridColumn("grid", "Grid"),
    ]
    grid = data_grid("g", columns, [], sorted_by="count")
    label, count, dims = grid.columnDefs
    assert (label["sortingOrder"], count["sortingOrder"]) == (["asc"], ["desc"])
    assert count["sort"] == "desc" and "sort" not in label
    assert dims["sortable"] is False and "sortingOrder" not in dims
    assert label["pinned"] == "left" and "pinned" not in count
    # The browser never reorders a server page: every comparator is the named no-op.
    assert {c["comparator"]["function"] for c in grid.columnDefs} == {"keepServerOrder"}


def test_kernel_cells_are_text_with_the_full_name_in_a_tooltip() -> None:
    grid = _grid(kernels_panel(_page(HOSTILE, LONG), [], KernelQuery(), "k"))
    assert grid.dangerously_allow_code is False
    assert not any("cellRenderer" in c or "cellRendererSelector" in c for c in grid.columnDefs)
    assert all(isinstance(v, str) for row in grid.rowData for v in row.values())
    label = grid.columnDefs[0]
    assert (label["field"], label["tooltipField"]) == ("label", "label_full")
    hostile, long = grid.rowData
    assert (hostile["label"], hostile["label_full"]) == (shorten_kernel_name(HOSTILE, 70), HOSTILE)
    assert long["label_full"] == LONG and len(long["label"]) < len(LONG)
    assert (long["total_ns"], long["pct"], long["grid"]) == ("1.50 µs", "50.0%", "4x1x1")


def test_kernel_columns_sortable_are_those_the_api_sorts() -> None:
    grid = _grid(kernels_panel(_page("a"), [], KernelQuery(sort="count"), "k"))
    sortable = {c["field"] for c in grid.columnDefs if c["sortable"]}
    assert sortable == {"label", "count", "total_ns", "mean_ns"} <= set(SORT_KEYS)
    assert [c["field"] for c in grid.columnDefs if c.get("sort")] == ["count"]


def test_building_the_kernels_panel_warns_of_no_deprecated_component() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        kernels_panel(_page("a"), [], KernelQuery(), "k")


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        (None, None),
        ([], None),
        ([{"colId": "label", "sort": None}, {"colId": "count", "sort": "desc"}], "count"),
        ([{"colId": "label", "sort": "asc", "width": 340}], "label"),
    ],
)
def test_sorted_column_reads_the_grid_column_state(
    state: list[dict[str, Any]] | None, expected: str | None
) -> None:
    assert sorted_column(state) == expected


def test_pager_buttons_lead_to_their_pages_and_stop_at_the_ends() -> None:
    assert pager(0, 1, "p") is None
    nav = pager(0, 3, "p")
    assert nav is not None
    buttons = [c for c in nav.children if isinstance(c, html.Button)]
    assert [(b.id["role"], b.id["page"], b.disabled) for b in buttons] == [
        ("first", 0, True), ("previous", -1, True), ("next", 1, False), ("last", 2, False),
    ]  # fmt: skip
    assert "Page 1 of 3" in [c.children for c in nav.children if isinstance(c, html.Span)]
    last = pager(2, 3, "p")
    assert last is not None
    assert [b.disabled for b in last.children if isinstance(b, html.Button)] == [
        False, False, True, True,
    ]  # fmt: skip


def test_kernels_panel_pages_by_the_api_page_size() -> None:
    panel = kernels_panel(_page("a", count=120), [], KernelQuery(page=1), "k")
    nav = panel.children[1].children[-1]
    assert "Page 2 of 3" in [c.children for c in nav.children if isinstance(c, html.Span)]
    assert kernels_panel(_page("a"), [], KernelQuery(), "k").children[1].children[-1] is None


def test_pages_do_not_ship_the_unused_enterprise_chunk() -> None:
    from dashboard.app import create_dash_app

    app = create_dash_app("http://127.0.0.1:9")
    html = app.server.test_client().get("/").get_data(as_text=True)
    assert "dash_ag_grid/async-community" in html
    assert "async-enterprise" not in html
