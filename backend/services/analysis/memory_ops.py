"""Memory by op: what each op allocated and freed, and who held the memory at the peak.

Built on `memory_blocks` (allocations paired with their frees by address, each event given
to the innermost op or `record_function` range of its thread). A row's `kind` says which:
`op`, `range`, or `none` for the row `OUTSIDE` (events inside neither: in torch, mostly
frees when Python drops the last reference to a tensor outside any range). Grouping by
stack splits a row by the Python frames open when the op started (`with_stack` traces;
elsewhere every stack is empty).

Public surface: `compute_memory_ops`, `compute_memory_peak`, `OPS_SORTS`, `OUTSIDE`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlmodel import Session

from backend.models import Trace
from backend.models.memory_ops import (
    MemoryDevice,
    MemoryOpRow,
    MemoryOpsPublic,
    MemoryPeakPublic,
    MemoryPeakRow,
)
from backend.services.analysis.memory_blocks import (
    Block,
    DeviceBlocks,
    OpRef,
    devices_with_memory,
    load_blocks,
)
from backend.services.analysis.stored import read_events
from backend.services.errors import NotFoundError
from backend.services.traces import get_trace

OUTSIDE = "(outside any op)"
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
Key = tuple[str, str, tuple[str, ...]]  # kind, name, stack
KINDS = {"cpu_op": "op", "annotation": "range"}


@dataclass(slots=True)
class _Target:
    trace: Trace
    devices: list[MemoryDevice]
    rank: int | None
    device: int | None
    has_stacks: bool


def _blocks_of(target: _Target, with_stacks: bool) -> DeviceBlocks:
    """The device's allocation blocks (none when the trace has no memory events)."""
    if target.device is None:
        return DeviceBlocks(rank=None, device=0)
    return load_blocks(target.trace, target.rank, target.device, with_stacks=with_stacks)


def _target(session: Session, trace_id: str, rank: int | None, device: int | None) -> _Target:
    """The trace and the (rank, device) asked for, or the first with memory events."""
    trace = get_trace(session=session, trace_id=trace_id)
    pairs = devices_with_memory(trace)
    devices = [MemoryDevice(rank=r, device=d) for r, d in pairs]
    chosen = [
        (r, d) for r, d in pairs if (device is None or d == device) and (rank is None or r == rank)
    ]
    if pairs and not chosen:
        listed = ", ".join(f"{d}" + ("" if r is None else f" (rank {r})") for r, d in pairs)
        asked = f"device {device}" if device is not None else "any device"
        raise NotFoundError(
            f"trace {trace_id} has no memory events on {asked}"
            + ("" if rank is None else f" of rank {rank}")
            + f"; devices with memory events: {listed} (-1 is host memory)"
        )
    python = read_events(trace, "SELECT 1 FROM {events} WHERE kind = 'python' LIMIT 1")
    r, d = chosen[0] if chosen else (None, None)
    return _Target(trace, devices, r, d, bool(python))


def _key(op: OpRef | None, blocks: DeviceBlocks, by_stack: bool) -> Key:
    if op is None:
        return ("none", OUTSIDE, ())
    return (KINDS[op.kind], op.name, blocks.stacks.get(op.id, ()) if by_stack else ())


def _live_at_peak(block: Block, peak: int) -> bool:
    return block.index <= peak and (block.free_index is None or block.free_index > peak)


def _op_rows(blocks: DeviceBlocks, by_stack: bool) -> list[MemoryOpRow]:
    rows: dict[Key, MemoryOpRow] = {}

    def row(key: Key) -> MemoryOpRow:
        if key not in rows:
            rows[key] = MemoryOpRow(
                name=key[1], kind=key[0], stack=list(key[2]), allocs=0, alloc_bytes=0,
                largest_alloc_bytes=0, frees=0, free_bytes=0, self_net_bytes=0,
                held_bytes=0, peak_bytes=0,
            )  # fmt: skip
        return rows[key]

    for b in blocks.blocks:
        r = row(_key(b.op, blocks, by_stack))
        r.allocs += 1
        r.alloc_bytes += b.bytes
        r.largest_alloc_bytes = max(r.largest_alloc_bytes, b.bytes)
        r.held_bytes += b.bytes if b.free_index is None else 0
        r.peak_bytes += b.bytes if _live_at_peak(b, blocks.peak_index) else 0
        if b.free_index is not None and not b.lost_free:
            f = row(_key(b.free_op, blocks, by_stack))
            f.frees += 1
            f.free_bytes += b.bytes
    for _, size, op in blocks.unmatched_frees:
        f = row(_key(op, blocks, by_stack))
        f.frees += 1
        f.free_bytes += size
    for r in rows.values():
        r.self_net_bytes = r.alloc_bytes - r.free_bytes
    return list(rows.values())


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
    by_stack = group == "stack"
    blocks = _blocks_of(target, by_stack)
    rows = sorted(_op_rows(blocks, by_stack), key=OPS_SORTS[sort])
    freed = [b for b in blocks.blocks if b.free_index is not None and not b.lost_free]
    return MemoryOpsPublic(
        trace_id=trace_id,
        rank=target.rank,
        device=target.device,
        devices=target.devices,
        group=group,
        sort=sort,
        has_stacks=target.has_stacks,
        events=blocks.events,
        allocs=len(blocks.blocks),
        alloc_bytes=sum(b.bytes for b in blocks.blocks),
        frees=len(freed) + len(blocks.unmatched_frees),
        free_bytes=sum(b.bytes for b in freed) + sum(s for _, s, _ in blocks.unmatched_frees),
        unmatched_frees=len(blocks.unmatched_frees),
        unmatched_free_bytes=sum(s for _, s, _ in blocks.unmatched_frees),
        outside_op_events=blocks.outside_op,
        count=len(rows),
        items=rows[offset : offset + limit],
        note="" if target.devices else NO_MEMORY,
    )


def _peak_rows(blocks: DeviceBlocks, by_stack: bool) -> list[MemoryPeakRow]:
    rows: dict[Key, MemoryPeakRow] = {}
    for b in blocks.blocks:
        if not _live_at_peak(b, blocks.peak_index):
            continue
        key = _key(b.op, blocks, by_stack)
        r = rows.get(key) or MemoryPeakRow(
            name=key[1], kind=key[0], stack=list(key[2]), allocations=0, bytes=0, largest_bytes=0,
            share_pct=0.0,
        )  # fmt: skip
        rows[key] = r
        r.allocations += 1
        r.bytes += b.bytes
        r.largest_bytes = max(r.largest_bytes, b.bytes)
    for r in rows.values():
        r.share_pct = (
            round(100.0 * r.bytes / blocks.peak_allocated, 3) if blocks.peak_allocated else 0.0
        )
    return sorted(rows.values(), key=lambda r: (-r.bytes, r.name, r.stack))


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
    by_stack = group == "stack"
    blocks = _blocks_of(target, by_stack)
    rows = _peak_rows(blocks, by_stack)
    live = [b for b in blocks.blocks if _live_at_peak(b, blocks.peak_index)]
    live_bytes = sum(b.bytes for b in live)
    return MemoryPeakPublic(
        trace_id=trace_id,
        rank=target.rank,
        device=target.device,
        devices=target.devices,
        group=group,
        has_stacks=target.has_stacks,
        peak_t_ns=blocks.peak_t_ns,
        peak_allocated_bytes=blocks.peak_allocated,
        peak_reserved_bytes=blocks.peak_reserved,
        live_allocations=len(live),
        live_bytes=live_bytes,
        before_trace_bytes=max(blocks.peak_allocated - live_bytes, 0),
        count=len(rows),
        items=rows[:limit],
        note="" if target.devices else NO_MEMORY,
    )
