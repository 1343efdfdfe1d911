"""The Operators tab: torch's `key_averages()` table, the kernels of the selected op, and
CPU time by Python stack and by module as icicles where the trace recorded them.

The table holds every row the API returned (`/traces/{id}/operators`, up to 5,000) and
sorts them in the browser; grouping and search are server-side and live in the URL. Times
stay ns in the rows, so a column sorts as numbers, and read by magnitude (`4.56 ms`) as on
every page. Cells are plain text (`components.grid`): an op named `<script>` shows as typed.

Public surface: `operators_panel`, `op_kernels`, `GROUPS`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dash import dcc, html

from dashboard.api.operators import OperatorItem, Operators, OperatorStacks
from dashboard.components.grid import DURATION_NS, browser_grid
from dashboard.figures.operators import stack_icicle_figure
from dashboard.format import format_count, format_duration_ns, shorten_kernel_name

__all__ = ["GROUPS", "op_kernels", "operator_rows", "operators_panel"]

JSON = dict[str, Any]
GROUPS = (("name", "Op name"), ("shape", "Op name and input shapes"))
# row field (the API's, in ns) -> header; cells show them by magnitude (grid.DURATION_NS)
TIME_COLUMNS = (
    ("device_total_ns", "Device total"),
    ("device_self_ns", "Device self"),
    ("cpu_total_ns", "CPU total"),
    ("cpu_self_ns", "CPU self"),
    ("device_avg_ns", "Device avg"),
    ("cpu_avg_ns", "CPU avg"),
)


def operator_rows(items: Sequence[OperatorItem]) -> list[JSON]:
    """Grid rows: numbers stay numbers (sorted as such), kernels ride along for the
    selection callback."""
    rows = []
    for i in items:
        row: JSON = {
            "name": i["name"],
            "kind": "range" if i["kind"] == "annotation" else "op",
            "input_shapes": i.get("input_shapes") or "",
            "count": i["count"],
            "kernels": list(i["kernels"]),
            "call_stacks": list(i.get("call_stacks") or []),
        }
        for field, _ in TIME_COLUMNS:
            row[field] = int(i[field])  # type: ignore[literal-required]
        rows.append(row)
    return rows


def _column_defs(group: str) -> list[JSON]:
    text = {"filter": False, "cellClass": "grid-text", "tooltipField": "name"}
    cols: list[JSON] = [
        {"field": "name", "headerName": "Operator", "width": 240, "pinned": "left", **text},
        {
            "field": "kind",
            "headerName": "Kind",
            "width": 76,
            "filter": False,
            "headerTooltip": "op: a cpu_op; range: a record_function range",
        },
    ]
    if group == "shape":
        cols.append({"field": "input_shapes", "headerName": "Input shapes", "width": 180,
                     "filter": False, "tooltipField": "input_shapes"})  # fmt: skip
    number = {
        "type": "numericColumn",
        "filter": False,
        "width": 150,
        "sortingOrder": ["desc", "asc"],
    }
    cols.append({"field": "count", "headerName": "Calls", **number, "width": 100})
    for field, header in TIME_COLUMNS:
        col = {"field": field, "headerName": header, **number, **DURATION_NS}
        if field == "device_total_ns":
            col["sort"] = "desc"
        cols.append(col)
    return cols


STACK_FRAMES = 12  # innermost frames shown per call site


def _call_stacks(row: JSON, id_prefix: str) -> list[Any]:
    """Where the op was called from (with_stack traces): its top call sites, innermost
    frames last, as in a Python traceback."""
    sites = row.get("call_stacks") or []
    if not sites:
        return []
    out: list[Any] = [html.H3("Called from (Python stack, innermost last)")]
    for site in sites:
        frames = list(site["frames"])[-STACK_FRAMES:]
        head = (f"{format_count(site['count'])} calls, "
                f"{format_duration_ns(site['cpu_total_ns'])} CPU")  # fmt: skip
        out.append(
            html.Div(
                [
                    html.Div(head, className="muted"),
                    html.Ol(
                        [html.Li(f, className="mono") for f in frames], className="stack-frames"
                    ),
                ],
                className="call-site",
            )
        )
    return [html.Div(out, id=f"{id_prefix}-call-stacks")]


def op_kernels(row: JSON | None, id_prefix: str) -> html.Div:
    """The GPU work one op launched (itself and through its children), largest first, and
    where it was called from."""
    if not row:
        return html.Div("Select an op to see the kernels it launched.", className="muted")
    kernels = row.get("kernels") or []
    title = html.H3(f"Kernels launched by {row.get('name', '')}", className="op-kernels-title")
    if not kernels:
        none = html.Div("This op launched no GPU work.", className="muted")
        return html.Div([title, none, *_call_stacks(row, id_prefix)])
    header = html.Tr([html.Th("Kernel / copy / memset"), html.Th("Kind"), html.Th("Count"),
                      html.Th("Total")])  # fmt: skip
    body = [
        html.Tr(
            [
                html.Td(
                    shorten_kernel_name(k["name"], 90), className="kernel-name", title=k["name"]
                ),
                html.Td(k["kind"]),
                html.Td(format_count(k["count"]), className="num"),
                html.Td(format_duration_ns(k["total_ns"]), className="num"),
            ]
        )
        for k in kernels
    ]
    table = html.Table([html.Thead(header), html.Tbody(body)], className="data-table")
    return html.Div([title, table, *_call_stacks(row, id_prefix)], id=f"{id_prefix}-kernels-table")


def _controls(group: str, q: str, id_prefix: str) -> html.Div:
    return html.Div(
        [
            html.Label("Group by", htmlFor=f"{id_prefix}-group", className="control-label"),
            dcc.Dropdown(
                id=f"{id_prefix}-group",
                options=[{"label": t, "value": v} for v, t in GROUPS],
                value=group,
                clearable=False,
                className="control-select",
            ),
            dcc.Input(
                id=f"{id_prefix}-search",
                type="search",
                value=q,
                placeholder="Search ops (Enter)…",
                debounce=True,
                className="control-search",
            ),
        ],
        className="controls",
    )


def _icicles(stacks: OperatorStacks | None, id_prefix: str) -> list[html.Section]:
    if stacks is None:
        text = ("No Python frames in this trace (recorded without with_stack=True or "
                "with_modules=True): no call-stack or module view.")  # fmt: skip
        return [html.Section(html.Div(text, className="muted", id=f"{id_prefix}-no-stacks"),
                             className="card")]  # fmt: skip
    out = []
    for key, title in (("stacks", "CPU time by Python stack"), ("modules", "Module hierarchy")):
        tree = stacks[key]  # type: ignore[literal-required]
        if not tree["nodes"]:
            body: Any = html.Div(tree.get("reason") or "", className="muted",
                                 id=f"{id_prefix}-{key}-reason")  # fmt: skip
        else:
            body = dcc.Graph(
                id=f"{id_prefix}-{key}-icicle",
                figure=stack_icicle_figure(tree),
                config={"displaylogo": False, "responsive": True},
            )
        out.append(html.Section([html.H2(title), body], className="card"))
    return out


def operators_panel(
    ops: Operators | None,
    stacks: OperatorStacks | None,
    group: str,
    q: str,
    id_prefix: str,
) -> html.Div:
    """The table (with controls), the first op's kernels, then the icicles or why not."""
    if ops is None:
        return html.Div("Could not load the operators.", className="notice notice-error")
    items = ops["items"]
    if not items and not q:
        return html.Div(
            "This trace has no CPU operators (torch.profiler with ProfilerActivity.CPU "
            "records them; nsys and ncu files have none).",
            className="empty-state",
            id=f"{id_prefix}-empty",
        )
    rows = operator_rows(items)
    grid = browser_grid(f"{id_prefix}-grid", _column_defs(group), rows, "operators.csv")
    grid.dashGridOptions |= {
        "rowSelection": {"mode": "singleRow", "enableClickSelection": True, "checkboxes": False},
        "paginationPageSize": 20,
    }
    shown = f"{format_count(ops['count'])} rows" + (f" matching “{q}”" if q else "")
    shown += "; click a row for its kernels"
    if ops["count"] > len(items):
        shown += f" (the {format_count(len(items))} with the most device time shown)"
    note = ("Definitions are torch key_averages()': self = total minus direct children "
            "(ops, record_function ranges, runtime calls); device time = GPU work launched "
            "by the op, through its children for the total.")  # fmt: skip
    table = html.Section(
        [
            html.H2("Operators"),
            _controls(group, q, id_prefix),
            html.Div(shown, className="muted", id=f"{id_prefix}-found"),
            grid,
            html.Div(note, className="muted small"),
        ],
        className="card",
    )
    first = rows[0] if rows else None
    kernels = html.Section(
        [html.Div(op_kernels(first, id_prefix), id=f"{id_prefix}-kernels")], className="card"
    )
    return html.Div([table, kernels, *_icicles(stacks, id_prefix)])
