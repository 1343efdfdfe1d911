"""Data grids (dash-ag-grid) with one set of defaults, for tables the server sorts and pages.

Rows arrive already sorted, paged and formatted by the API and `dashboard.format`, so a
header click does not reorder them in the browser: it records the requested sort in the
grid's `columnState`, a page callback puts it in the URL, and the next page comes back
sorted. Each sortable column offers only the direction the API sorts it in.

Every cell is plain text, because names come from uploaded traces and may be hostile:
no column has a `cellRenderer`, so AG Grid writes values with `textContent`, and
`dangerously_allow_code` stays off, so the grid refuses any string it would evaluate.
Tooltips show a row's full text (AG Grid's tooltip also writes `textContent`).

`browser_grid` is the other kind: a whole result (a SQL query's rows) that the browser
sorts, pages and exports as CSV itself.

Numbers in a `browser_grid` stay numbers (so they sort as such) and are written by unit:
a column with `DURATION_NS` or `SIZE_BYTES` shows `4.56 ms` or `15.0 KB`, the text of
`dashboard.format` (assets/units.js), while its CSV keeps the raw ns or bytes.

Public surface: `GridColumn`, `data_grid`, `browser_grid`, `sorted_column`, `DURATION_NS`,
`SIZE_BYTES`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import dash_ag_grid
from dash_ag_grid import AgGrid

__all__ = [
    "DURATION_NS",
    "SIZE_BYTES",
    "GridColumn",
    "browser_grid",
    "data_grid",
    "sorted_column",
]

JSON = dict[str, Any]

# The app loads every async chunk eagerly (`eager_loading` in `dashboard/app.py`), which
# would ship AG Grid's 3.5 MB Enterprise chunk to every page. No grid here sets
# `enableEnterpriseModules`, so the chunk is never used; it is dropped from the package's
# script list (checked by tests/dashboard/test_grid.py).
dash_ag_grid._js_dist[:] = [
    dist
    for dist in dash_ag_grid._js_dist
    if "enterprise" not in str(dist.get("relative_package_path", ""))
]

# Quartz with the page's own colours and type (style.css), so a grid reads like the HTML
# tables beside it; the page has one light scheme. Evaluated by dash-ag-grid's function
# parser, which needs no `dangerously_allow_code`.
_THEME = """themeQuartz.withParams({
    fontFamily: 'inherit', fontSize: 13, headerFontSize: 12, headerFontWeight: 600,
    foregroundColor: '#212529', backgroundColor: '#ffffff', accentColor: '#3b5bdb',
    headerTextColor: '#6c757d', headerBackgroundColor: '#f8f9fa', borderColor: '#e3e6ea',
    rowHoverColor: '#f3f5f9', wrapperBorder: false, wrapperBorderRadius: 0,
    columnBorder: false, spacing: 5, cellHorizontalPadding: 10,
    headerColumnResizeHandleColor: 'transparent', tooltipBackgroundColor: '#212529',
    tooltipTextColor: '#ffffff', tooltipBorder: false,
})"""

# Column options of a number in ns or bytes: shown by unit, exported raw (assets/units.js).
DURATION_NS: JSON = {
    "valueFormatter": {"function": "formatDurationNs(params.value)"},
    "useValueFormatterForExport": False,
}
SIZE_BYTES: JSON = {
    "valueFormatter": {"function": "formatBytes(params.value)"},
    "useValueFormatterForExport": False,
}

# Keeps the server's order when a header is clicked, until the sorted page arrives.
_KEEP_ORDER = {"function": "keepServerOrder"}  # assets/dashAgGridFunctions.js


@dataclass(frozen=True, slots=True)
class GridColumn:
    """One column: the row field it shows, its header, and how it reads.

    `sort` is the one direction the server sorts this column in (None: not sortable);
    `tooltip_field` names the row field holding the full text shown on hover; `width` is
    a text column's (numbers fit their contents).
    """

    field: str
    header: str
    text: bool = False
    sort: Literal["asc", "desc"] | None = None
    tooltip_field: str | None = None
    width: int = 300

    def column_def(self, sorted_by: str | None, pinned: bool = False) -> JSON:
        """AG Grid's `colDef` for this column; `sorted_by` is the field sorted now."""
        col: JSON = {
            "field": self.field,
            "headerName": self.header,
            "sortable": self.sort is not None,
            "sortingOrder": [self.sort] if self.sort else None,
            "sort": self.sort if self.sort and self.field == sorted_by else None,
            "comparator": _KEEP_ORDER,
            "cellClass": "grid-text" if self.text else "grid-num",
            "headerClass": None if self.text else "ag-right-aligned-header",
        }
        if self.tooltip_field:
            col["tooltipField"] = self.tooltip_field
        if self.text:
            col |= {"width": self.width, "minWidth": 160}
        if pinned:
            col["pinned"] = "left"
        return {k: v for k, v in col.items() if v is not None}


def data_grid(
    grid_id: str,
    columns: Sequence[GridColumn],
    rows: Sequence[JSON],
    sorted_by: str | None = None,
) -> AgGrid:
    """A grid of `rows` (string values, one server page) in the order given."""
    return AgGrid(
        id=grid_id,
        columnDefs=[c.column_def(sorted_by, pinned=i == 0) for i, c in enumerate(columns)],
        rowData=list(rows),
        className="perf-grid",
        style={"width": "100%"},
        dangerously_allow_code=False,
        dashGridOptions={
            "theme": {"function": _THEME},
            "domLayout": "autoHeight",
            # Numbers fit their contents (every column rendered, so each can be measured);
            # text keeps its width, and the first column stays put when the grid scrolls.
            "autoSizeStrategy": {
                "type": "fitCellContents",
                "colIds": [c.field for c in columns if not c.text],
            },
            "suppressColumnVirtualisation": True,
            "suppressMultiSort": True,
            "suppressMovableColumns": True,
            "enableCellTextSelection": True,
            "ensureDomOrder": True,
            "tooltipShowDelay": 350,
            "tooltipInteraction": True,
        },
    )


def browser_grid(
    grid_id: str, column_defs: Sequence[JSON], rows: Sequence[JSON], csv_name: str
) -> AgGrid:
    """A grid holding every row, sorted and paged (50 a page) in the browser; setting its
    `exportDataAsCsv` to true downloads all rows as `csv_name`."""
    return AgGrid(
        id=grid_id,
        columnDefs=list(column_defs),
        rowData=list(rows),
        className="perf-grid",
        style={"width": "100%"},
        dangerously_allow_code=False,
        csvExportParams={"fileName": csv_name},
        dashGridOptions={
            "theme": {"function": _THEME},
            "domLayout": "autoHeight",
            "pagination": True,
            "paginationPageSize": 50,
            "paginationPageSizeSelector": [20, 50, 100, 500],
            "suppressMovableColumns": True,
            "enableCellTextSelection": True,
            "ensureDomOrder": True,
            "tooltipShowDelay": 350,
        },
    )


def sorted_column(column_state: Sequence[JSON] | None) -> str | None:
    """The field the grid is sorted by, read from its `columnState`; None if unsorted."""
    return next((c.get("colId") for c in column_state or [] if c.get("sort")), None)
