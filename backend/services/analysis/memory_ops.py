"""Memory by op: what each op allocated and freed, and who held the memory at the peak.

Built on `memory_blocks` (allocations paired with their frees by address, each event given
to the innermost op or `record_function` range of its thread). A row's `kind` says which:
`op`, `range`, or `none` for the row `OUTSIDE` (events inside neither: in torch, mostly
frees when Python drops the last reference to a tensor outside any range). Grouping by
stack splits a row by the Python frames open when the op started (`with_stack` traces;
elsewhere every stack is empty).

The blocks are paired and summed once at ingest, per device and both groupings
(`memory_derive`); a request reads one device's rows.

Public surface: `compute_memory_ops`, `compute_memory_peak`, `OPS_SORTS`, `OUTSIDE`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlmodel import Session

from backend.models import Trace
from backend.models.memory_ops import (
    MemoryDevice,
    MemoryOpRow,
    MemoryOpsPublic,
    MemoryPeakPublic,
    MemoryPeakRow,
)
from backend.services.analysis.derived import query_derived
from backend.services.analysis.memory_derive import DEVICE_FIELDS, OP_FIELDS
from backend.services.errors import NotFoundError
from backend.services.traces import get_trace

NO_MEMORY = (
    "This trace has no memory events: profile with profile_memory=True to record the "
    "allocator's activity."
)
OPS_SORTS: dict[str, Callable[[MemoryOpRow], tuple[int | str, ...]]] = {
    "alloc_bytes": lambda r: (-r.alloc_bytes, r.name),
    "allocs": lambda r: (-r.allocs, r.name),
    "free_bytes": lambda r: (-r.free_bytes, r.name),
    "self_net_bytes": lambda r: (-r.self_net_bytes, r.name),
    "held_bytes": lambda r: (-r.held_bytes, r.name),
    "peak_bytes": lambda r: (-r.peak_bytes, r.name),
    "name": lambda r: (r.name,),
}
_DEVICES = """
SELECT * FROM {memory_devices} ORDER BY device = -1, device, rank NULLS FIRST
"""
_ROWS = """
SELECT name, kind, stack, * EXCLUDE (rank, device, "group", ord, name, kind, stack)
FROM {table} WHERE rank IS NOT DISTINCT FROM ? AND device = ? AND "group" = ? ORDER BY ord
"""
_STACKS = "SELECT count(*) FROM {stack_tree} WHERE tree = 'stacks'"


@dataclass(slots=True)
class _Target:
    trace: Trace
    devices: list[MemoryDevice]
    rank: int | None
    device: int | None
    totals: dict[str, Any]  # DEVICE_FIELDS of the device; empty without memory events
    has_stacks: bool


def _target(session: Session, trace_id: str, rank: int | None, device: int | None) -> _Target:
    """The trace and the (rank, device) asked for, or the first with memory events."""
    trace = get_trace(session=session, trace_id=trace_id)
    found = query_derived(trace, _DEVICES)
    pairs = [(r[0], r[1]) for r in found]
    devices = [MemoryDevice(rank=r, device=d) for r, d in pairs]
    chosen = [
        row for row in found
        if (device is None or row[1] == device) and (rank is None or row[0] == rank)
    ]  # fmt: skip
    if pairs and not chosen:
        listed = ", ".join(f"{d}" + ("" if r is None else f" (rank {r})") for r, d in pairs)
        asked = f"device {device}" if device is not None else "any device"
        raise NotFoundError(
            f"trace {trace_id} has no memory events on {asked}"
            + ("" if rank is None else f" of rank {rank}")
            + f"; devices with memory events: {listed} (-1 is host memory)"
        )
    stacks = query_derived(trace, _STACKS)
    if not chosen:
        return _Target(trace, devices, None, None, {}, bool(stacks and stacks[0][0]))
    rank_, device_, *totals = chosen[0]
    return _Target(trace, devices, rank_, device_, dict(zip(DEVICE_FIELDS, totals, strict=True)),
                   bool(stacks and stacks[0][0]))  # fmt: skip


def _rows(target: _Target, table: str, group: str) -> list[tuple[Any, ...]]:
    if target.device is None:
        return []
    sql = _ROWS.replace("{table}", "{" + table + "}")
    return query_derived(target.trace, sql, [target.rank, target.device, group])


def _totals(target: _Target) -> dict[str, Any]:
    """The device's totals; zeros (and no peak) for a trace without memory events."""
    if target.totals:
        return target.totals
    return {f: 0 for f in DEVICE_FIELDS} | {"peak_t_ns": None, "peak_reserved_bytes": None}


def compute_memory_ops(
    *,
    session: Session,
    trace_id: str,
    device: int | None = None,
    rank: int | None = None,
    group: str = "op",
    sort: str = "alloc_bytes",
    limit: int = 50,
    offset: int = 0,
) -> MemoryOpsPublic:
    """Per op (or op and stack): allocations, frees, what it still held, its share of the peak.

    Raises:
        NotFoundError: no such trace, or no memory events on the device asked for.
    """
    target = _target(session, trace_id, rank, device)
    items = []
    for name, kind, stack, *values in _rows(target, "memory_ops", group):
        f = dict(zip(OP_FIELDS, values, strict=True))
        net = f["alloc_bytes"] - f["free_bytes"]
        items.append(MemoryOpRow(name=name, kind=kind, stack=stack, self_net_bytes=net, **f))
    rows = sorted(items, key=OPS_SORTS[sort])
    t = _totals(target)
    return MemoryOpsPublic(
        trace_id=trace_id, rank=target.rank, device=target.device, devices=target.devices,
        group=group, sort=sort, has_stacks=target.has_stacks, events=t["events"],
        allocs=t["allocs"], alloc_bytes=t["alloc_bytes"], frees=t["frees"],
        free_bytes=t["free_bytes"], unmatched_frees=t["unmatched_frees"],
        unmatched_free_bytes=t["unmatched_free_bytes"],
        outside_op_events=t["outside_op_events"], count=len(rows),
        items=rows[offset : offset + limit], note="" if target.devices else NO_MEMORY,
    )  # fmt: skip


def compute_memory_peak(
    *,
    session: Session,
    trace_id: str,
    device: int | None = None,
    rank: int | None = None,
    group: str = "op",
    limit: int = 50,
) -> MemoryPeakPublic:
    """The allocations live at the device's peak of allocated memory, by op, largest first.

    Raises:
        NotFoundError: no such trace, or no memory events on the device asked for.
    """
    target = _target(session, trace_id, rank, device)
    t = _totals(target)
    peak = t["peak_allocated_bytes"]
    rows = [
        MemoryPeakRow(name=name, kind=kind, stack=stack, allocations=n, bytes=size,
                      largest_bytes=largest,
                      share_pct=round(100.0 * size / peak, 3) if peak else 0.0)
        for name, kind, stack, n, size, largest in _rows(target, "memory_peak", group)
    ]  # fmt: skip
    rows.sort(key=lambda r: (-r.bytes, r.name, r.stack))
    return MemoryPeakPublic(
        trace_id=trace_id, rank=target.rank, device=target.device, devices=target.devices,
        group=group, has_stacks=target.has_stacks, peak_t_ns=t["peak_t_ns"],
        peak_allocated_bytes=peak, peak_reserved_bytes=t["peak_reserved_bytes"],
        live_allocations=t["live_allocations"], live_bytes=t["live_bytes"],
        before_trace_bytes=max(peak - t["live_bytes"], 0), count=len(rows),
        items=rows[:limit], note="" if target.devices else NO_MEMORY,
    )  # fmt: skip
