"""The Memory tab's by-op part: the top allocators at the peak, then memory by op.

Pure builders from `/memory/peak` and `/memory/ops`. Every control is a link carrying the
tab's query (`mdevice`, `mgroup`, `msort`), so a view is a URL and needs no callback. The
peak's time links to the timeline, a window around it. Names and stacks come from the
uploaded trace, so they reach the grid as plain text (`components.grid`).

Public surface: `memory_ops_panel`, `memory_ops_query`, `MemoryOpsQuery`, `OPS_SORTS`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dash import dcc, html

from dashboard.api.memory_ops import MemoryDevice, MemoryOps, MemoryPeak
from dashboard.components.grid import GridColumn, data_grid
from dashboard.components.trace_views import tab_href
from dashboard.format import format_bytes, format_count, format_duration_ns, format_pct

__all__ = ["OPS_SORTS", "MemoryOpsQuery", "memory_ops_panel", "memory_ops_query"]

JSON = dict[str, Any]
OPS_SORTS = (
    ("alloc_bytes", "allocated"),
    ("held_bytes", "held at the end"),
    ("peak_bytes", "live at the peak"),
    ("self_net_bytes", "net"),
    ("allocs", "allocations"),
)
GROUPS = (("op", "op"), ("stack", "op and Python stack"))
STACK_FRAMES = 3  # innermost frames shown in a cell; the tooltip has them all
SEP = " \u203a "  # between frames, outermost first (the tooltip)
INNER_SEP = " \u2039 "  # between frames, innermost first (the cell)
MIN_WINDOW_NS = 20_000


@dataclass(frozen=True, slots=True)
class MemoryOpsQuery:
    """What the tables show: one device (None: the API's first), grouping and sort."""

    device: int | None = None
    group: str = "op"
    sort: str = "alloc_bytes"

    def link(self, trace_id: str, **change: Any) -> str:
        """This view's URL with some fields changed."""
        new = {"device": self.device, "group": self.group, "sort": self.sort, **change}
        return tab_href(
            trace_id,
            "memory",
            mdevice="" if new["device"] is None else str(new["device"]),
            mgroup="" if new["group"] == "op" else str(new["group"]),
            msort="" if new["sort"] == "alloc_bytes" else str(new["sort"]),
        )


def memory_ops_query(query: dict[str, str]) -> MemoryOpsQuery:
    """The tables' state from the URL, anything unknown replaced by the default."""
    try:
        device: int | None = int(query.get("mdevice") or "")
    except ValueError:
        device = None
    group = query.get("mgroup") or "op"
    sort = query.get("msort") or "alloc_bytes"
    return MemoryOpsQuery(
        device=device if device is None or device >= -1 else None,
        group=group if group in dict(GROUPS) else "op",
        sort=sort if sort in dict(OPS_SORTS) else "alloc_bytes",
    )


def _device_label(d: MemoryDevice) -> str:
    name = "Host" if d["device"] == -1 else f"GPU {d['device']}"
    return name if d["rank"] is None else f"{name} (rank {d['rank']})"


_BUILTIN = re.compile(r"<built-in (?:method|function) ([^ >]+)[^>]*>")


def _short_frame(frame: str) -> str:
    """`torch/nn/modules/linear.py(125): forward` as `linear.py(125): forward`, and
    `<built-in method layer_norm of type object at 0x7f...>` as `layer_norm()`."""
    builtin = _BUILTIN.fullmatch(frame)
    if builtin:
        return builtin.group(1) + "()"
    where, colon, func = frame.partition(": ")
    return where.rsplit("/", 1)[-1] + colon + func


def _stack_cell(stack: Sequence[str]) -> tuple[str, str]:
    """The innermost frames, innermost first and without their folders (the most specific
    frame must survive a narrow cell), and the whole stack outermost first, as Python
    prints a traceback, for the tooltip."""
    if not stack:
        return "—", "no Python frames recorded"
    shown = [_short_frame(f) for f in reversed(stack[-STACK_FRAMES:])]
    text = INNER_SEP.join(shown)
    more = INNER_SEP + "\u2026" if len(stack) > STACK_FRAMES else ""
    return text + more, SEP.join(stack)


def _choice(
    label: str, options: Sequence[tuple[str, str]], current: str, hrefs: dict[str, str]
) -> html.Div:
    links: list[Any] = [html.Span(label, className="control-label")]
    for key, text in options:
        cls = "chip chip-active" if key == current else "chip"
        links.append(dcc.Link(text, href=hrefs[key], className=cls))
    return html.Div(links, className="memory-ops-choice")


def _controls(
    trace_id: str, body: MemoryOps | MemoryPeak, query: MemoryOpsQuery, sorts: bool
) -> html.Div:
    """Device and grouping (they set both tables) with the peak; the sort with the ops."""
    devices = body["devices"]
    rows = []
    if not sorts and len(devices) > 1:
        opts = [(str(d["device"]), _device_label(d)) for d in devices]
        hrefs = {str(d["device"]): query.link(trace_id, device=d["device"]) for d in devices}
        rows.append(_choice("Device", opts, str(body["device"]), hrefs))
    if not sorts and body["has_stacks"]:
        hrefs = {k: query.link(trace_id, group=k) for k, _ in GROUPS}
        rows.append(_choice("Rows per", GROUPS, query.group, hrefs))
    if sorts:
        hrefs = {k: query.link(trace_id, sort=k) for k, _ in OPS_SORTS}
        rows.append(_choice("Largest first by", OPS_SORTS, query.sort, hrefs))
    return html.Div(rows, className="memory-ops-controls")


KIND_LABELS = {"op": "op", "range": "range", "none": "—"}


def _name_cells(name: str, kind: str, stack: Sequence[str], with_stack: bool) -> JSON:
    row = {"name": name, "name_full": name, "kind": KIND_LABELS.get(kind, kind)}
    if with_stack:
        row["stack"], row["stack_full"] = _stack_cell(stack)
    return row


def _name_columns(with_stack: bool) -> list[GridColumn]:
    cols = [
        GridColumn("name", "Op or range", text=True, tooltip_field="name_full", width=240),
        GridColumn("kind", "Kind"),
    ]
    if with_stack:
        header = "Python stack (innermost first)"
        cols.append(GridColumn("stack", header, text=True, tooltip_field="stack_full", width=340))
    return cols


def _timeline_href(trace_id: str, t_ns: int, duration_ns: int | None) -> str:
    pad = max((duration_ns or 0) // 200, MIN_WINDOW_NS)
    return f"/traces/{trace_id}/timeline?start_ns={t_ns - pad}&end_ns={t_ns + pad}"


def _peak_summary(
    trace_id: str, peak: MemoryPeak, start_ns: int | None, duration_ns: int | None
) -> html.Div:
    t = peak["peak_t_ns"]
    assert t is not None
    when = format_duration_ns(t - start_ns) + " into the trace" if start_ns is not None else ""
    reserved = peak["peak_reserved_bytes"]
    parts: list[Any] = [
        html.Strong(format_bytes(peak["peak_allocated_bytes"])),
        " allocated",
        f" ({format_bytes(reserved)} reserved)" if reserved is not None else "",
        f" at {when} " if when else " ",
        dcc.Link(
            "open in the timeline",
            href=_timeline_href(trace_id, t, duration_ns),
            id="memory-peak-timeline-link",
        ),
        html.Br(),
        f"Live then: {format_count(peak['live_allocations'])} blocks allocated in the trace, "
        f"{format_bytes(peak['live_bytes'])}",
    ]
    if peak["before_trace_bytes"]:
        parts.append(
            f"; {format_bytes(peak['before_trace_bytes'])} allocated before the profiler "
            "started, which no op in the trace owns"
        )
    return html.Div(parts, className="memory-peak-summary")


def _peak_section(
    trace_id: str,
    peak: MemoryPeak,
    query: MemoryOpsQuery,
    start_ns: int | None,
    duration_ns: int | None,
    id_prefix: str,
) -> html.Section:
    with_stack = peak["group"] == "stack"
    rows = [
        _name_cells(r["name"], r["kind"], r["stack"], with_stack)
        | {
            "bytes": format_bytes(r["bytes"]),
            "share": format_pct(r["share_pct"]),
            "allocations": format_count(r["allocations"]),
            "largest": format_bytes(r["largest_bytes"]),
        }
        for r in peak["items"]
    ]
    cols = [
        *_name_columns(with_stack),
        GridColumn("bytes", "Live at the peak"),
        GridColumn("share", "% of peak allocated"),
        GridColumn("allocations", "Blocks"),
        GridColumn("largest", "Largest block"),
    ]
    shown = f"top {len(rows)} of {peak['count']}" if peak["count"] > len(rows) else "all"
    return html.Section(
        [
            html.H2(
                f"Top allocators at the peak ({_device_label(_current(peak))}{_grouping(peak)})"
            ),
            _peak_summary(trace_id, peak, start_ns, duration_ns),
            _controls(trace_id, peak, query, sorts=False),
            html.Div(
                f"Live allocations grouped by the op that made them ({shown}).", className="muted"
            ),
            data_grid(f"{id_prefix}-peak-grid", cols, rows),
        ],
        className="card",
        id=f"{id_prefix}-peak",
    )


def _grouping(body: MemoryOps | MemoryPeak) -> str:
    return ", rows per op and Python stack" if body["group"] == "stack" else ""


def _current(body: MemoryOps | MemoryPeak) -> MemoryDevice:
    return {"rank": body["rank"], "device": body["device"] if body["device"] is not None else 0}


def _ops_section(
    trace_id: str, ops: MemoryOps, query: MemoryOpsQuery, id_prefix: str
) -> html.Section:
    with_stack = ops["group"] == "stack"
    rows = [
        _name_cells(r["name"], r["kind"], r["stack"], with_stack)
        | {
            "allocs": format_count(r["allocs"]),
            "alloc_bytes": format_bytes(r["alloc_bytes"]),
            "largest": format_bytes(r["largest_alloc_bytes"]),
            "frees": format_count(r["frees"]),
            "free_bytes": format_bytes(r["free_bytes"]),
            "net": format_bytes(r["self_net_bytes"]),
            "held": format_bytes(r["held_bytes"]),
            "peak": format_bytes(r["peak_bytes"]),
        }
        for r in ops["items"]
    ]
    cols = [
        *_name_columns(with_stack),
        GridColumn("alloc_bytes", "Allocated"),
        GridColumn("peak", "Live at peak"),
        GridColumn("held", "Held at end"),
        GridColumn("net", "Net (self)"),
        GridColumn("free_bytes", "Freed"),
        GridColumn("allocs", "Allocations"),
        GridColumn("frees", "Frees"),
        GridColumn("largest", "Largest"),
    ]
    shown = f"top {len(rows)} of {ops['count']}" if ops["count"] > len(rows) else "all"
    notes = [
        f"{format_count(ops['events'])} memory events, {format_count(ops['allocs'])} "
        f"allocations ({format_bytes(ops['alloc_bytes'])}), {format_count(ops['frees'])} frees "
        f"({format_bytes(ops['free_bytes'])}); {shown} rows. Each event belongs to the "
        "innermost CPU op or record_function range open on its thread; events in neither "
        "are \u201c(outside any op)\u201d. Frees and Net count what happened inside the "
        "row (Net is torch's self memory); Held and Live count the row's own allocations."
    ]
    if ops["unmatched_frees"]:
        notes.append(
            f" {format_count(ops['unmatched_frees'])} frees "
            f"({format_bytes(ops['unmatched_free_bytes'])}) released memory allocated before "
            "the trace."
        )
    return html.Section(
        [
            html.H2(f"Memory by op ({_device_label(_current(ops))}{_grouping(ops)})"),
            _controls(trace_id, ops, query, sorts=True),
            html.Div(notes, className="muted"),
            data_grid(f"{id_prefix}-ops-grid", cols, rows),
        ],
        className="card",
        id=f"{id_prefix}-ops",
    )


def memory_ops_panel(
    trace_id: str,
    ops: MemoryOps | None,
    peak: MemoryPeak | None,
    query: MemoryOpsQuery,
    start_ns: int | None,
    duration_ns: int | None,
    id_prefix: str,
) -> html.Div:
    """The peak's top allocators and the by-op table; a line saying why when there are none."""
    if ops is None or peak is None:
        return html.Div(
            html.Section("Could not load memory by op for this trace.", className="card"),
        )
    if ops["device"] is None or peak["peak_t_ns"] is None:
        return html.Div(
            html.Section(ops["note"] or "No memory events.", className="card empty-state")
        )
    return html.Div(
        [
            _peak_section(trace_id, peak, query, start_ns, duration_ns, id_prefix),
            _ops_section(trace_id, ops, query, id_prefix),
        ],
        id=id_prefix,
    )
