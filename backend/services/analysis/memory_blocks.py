"""Each allocation of one device's memory, with the op that made it and the one that freed it.

A `[memory]` event carries the signed size of one allocation (`Bytes` > 0) or free (< 0) and
its address; a free closes the open allocation at the same address. An event belongs to
the innermost op on its own thread whose half-open range [start, end) holds the event's
time, as in TensorBoard's memory view (torch_tb_profiler `MemoryParser`): the half-open end
keeps an event on the boundary of two ops out of the first. "Op" means a `cpu_op` or a
`record_function` range (kind `annotation`: `ProfilerStep#N`, `Optimizer.step#...`), as in
torch's `key_averages()`, whose `self_device_memory_usage` counts the memory an annotation
holds outside its children (TensorBoard drops those events). Events inside neither keep
`op = None`. With `with_stack`, an op's stack is the `python_function` frames on its thread
open at its start, outermost first.

The peak is the device's highest `Total Allocated` (first reached), the same instant the
Memory tab reports; traces without that field use the running sum of `Bytes`.

Public surface: `DeviceBlocks`, `Block`, `OpRef`, `OP_KINDS`, `load_blocks`,
`devices_with_memory`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from backend.services.analysis.stored import json_int, read_events_file

HOST = -1  # the device number of host memory, as Kineto writes its `Device Id`

_DEVICE = (
    f"CASE WHEN {json_int('Device Type')} = 0 THEN {HOST} "
    f"WHEN {json_int('Device Id')} >= 0 THEN {json_int('Device Id')} END"
)
_DEVICES_SQL = (
    f"SELECT DISTINCT rank, {_DEVICE} AS dev FROM {{events}} WHERE kind = 'memory' "
    "AND dev IS NOT NULL ORDER BY dev = -1, dev, rank NULLS FIRST"
)
_MEMORY_SQL = f"""
SELECT id, start_ns, pid, tid, {json_int("Bytes")}, {json_int("Addr")},
       {json_int("Total Allocated")}, {json_int("Total Reserved")}
FROM {{events}}
WHERE kind = 'memory' AND rank IS NOT DISTINCT FROM ? AND {_DEVICE} = ?
ORDER BY start_ns, id
"""
# Spans (ops or Python frames) on the threads that made the device's memory events.
_SPANS_SQL = f"""
WITH threads AS (
  SELECT DISTINCT pid, tid FROM {{events}}
  WHERE kind = 'memory' AND rank IS NOT DISTINCT FROM ? AND {_DEVICE} = ?
)
SELECT e.id, e.name, e.start_ns, e.start_ns + e.dur_ns AS end_ns, e.pid, e.tid, e.kind
FROM {{events}} e SEMI JOIN threads t
  ON e.pid IS NOT DISTINCT FROM t.pid AND e.tid IS NOT DISTINCT FROM t.tid
WHERE list_contains(?, e.kind) AND e.rank IS NOT DISTINCT FROM ?
  AND e.start_ns <= ? AND e.start_ns + e.dur_ns > ?
"""

Thread = tuple[int | None, int | None]
OP_KINDS = ("cpu_op", "annotation")
Span = tuple[int, str, int, int, str]  # id, name, start, end, kind


@dataclass(frozen=True, slots=True)
class OpRef:
    """The op an event belongs to: its event id, name, start and kind (`OP_KINDS`)."""

    id: int
    name: str
    start_ns: int
    thread: Thread
    kind: str


@dataclass(slots=True)
class Block:
    """One allocation; `free_index` is None while it is still held at the trace's end.

    `lost_free` marks a block closed by a later allocation at its address: its free was not
    recorded, so it has no freeing op.
    """

    bytes: int
    t_ns: int
    index: int
    op: OpRef | None
    free_index: int | None = None
    free_t_ns: int | None = None
    free_op: OpRef | None = None
    lost_free: bool = False


@dataclass(slots=True)
class DeviceBlocks:
    """One device's memory events, paired into blocks and attributed to ops."""

    rank: int | None
    device: int
    events: int = 0
    blocks: list[Block] = field(default_factory=list)
    # Frees of blocks allocated before the trace began: (index, bytes, op).
    unmatched_frees: list[tuple[int, int, OpRef | None]] = field(default_factory=list)
    outside_op: int = 0
    peak_index: int = -1
    peak_t_ns: int | None = None
    peak_allocated: int = 0
    peak_reserved: int | None = None
    stacks: dict[int, tuple[str, ...]] = field(default_factory=dict)


def devices_with_memory(events: Path) -> list[tuple[int | None, int]]:
    """(rank, device) pairs with memory events, GPUs first in order, host (-1) last."""
    return [(r, int(d)) for r, d in read_events_file(events, _DEVICES_SQL)]


def _innermost(spans: list[Span], times: Iterable[int]) -> Iterator[list[Span]]:
    """For each time (ascending), the spans open at it, outermost first.

    `spans` are sorted by start then longest first, so a parent
    is pushed before a child that starts with it. A span holds t when start <= t < end.
    """
    stack: list[Span] = []
    i, n = 0, len(spans)
    for t in times:
        while i < n and spans[i][2] <= t:
            span = spans[i]
            while stack and stack[-1][3] <= span[2]:
                stack.pop()
            stack.append(span)
            i += 1
        while stack and stack[-1][3] <= t:
            stack.pop()
        yield [s for s in stack if s[3] > t]


def _spans_by_thread(
    events: Path, kinds: Sequence[str], rank: int | None, device: int, lo: int, hi: int
) -> dict[Thread, list[Span]]:
    rows = read_events_file(events, _SPANS_SQL, (rank, device, list(kinds), rank, hi, lo))
    out: dict[Thread, list[Span]] = defaultdict(list)
    for eid, name, start, end, pid, tid, kind in rows:
        out[(pid, tid)].append((eid, name, start, end, kind))
    for spans in out.values():
        spans.sort(key=lambda s: (s[2], -s[3], s[0]))
    return out


def _attribute(
    events: Path, rank: int | None, device: int, rows: list[tuple[int, int, Thread]]
) -> dict[int, OpRef]:
    """Event id -> the innermost op holding it, for the events (id, t, thread) given."""
    if not rows:
        return {}
    lo, hi = min(r[1] for r in rows), max(r[1] for r in rows)
    ops = _spans_by_thread(events, OP_KINDS, rank, device, lo, hi)
    by_thread: dict[Thread, list[tuple[int, int]]] = defaultdict(list)
    for eid, t, thread in rows:
        by_thread[thread].append((t, eid))
    out: dict[int, OpRef] = {}
    for thread, held in by_thread.items():
        held.sort()
        spans = ops.get(thread, [])
        for (_, eid), open_ in zip(held, _innermost(spans, [t for t, _ in held]), strict=True):
            if open_:
                sid, name, start, _, kind = open_[-1]
                out[eid] = OpRef(sid, name, start, thread, kind)
    return out


def _stacks(
    events: Path, rank: int | None, device: int, ops: Iterable[OpRef]
) -> dict[int, tuple[str, ...]]:
    """Op id -> the Python frames open at its start on its thread (empty: none recorded)."""
    by_thread: dict[Thread, list[OpRef]] = defaultdict(list)
    for op in {o.id: o for o in ops}.values():
        by_thread[op.thread].append(op)
    if not by_thread:
        return {}
    starts = [o.start_ns for ops_ in by_thread.values() for o in ops_]
    frames = _spans_by_thread(events, ("python",), rank, device, min(starts), max(starts) + 1)
    out: dict[int, tuple[str, ...]] = {}
    for thread, ops_ in by_thread.items():
        ops_.sort(key=lambda o: o.start_ns)
        spans = frames.get(thread, [])
        for op, open_ in zip(ops_, _innermost(spans, [o.start_ns for o in ops_]), strict=True):
            out[op.id] = tuple(s[1] for s in open_)
    return out


def load_blocks(
    events: Path, rank: int | None, device: int, *, with_stacks: bool = False
) -> DeviceBlocks:
    """The device's allocations, paired with their frees by address and attributed to ops."""
    rows = read_events_file(events, _MEMORY_SQL, (rank, device))
    result = DeviceBlocks(rank=rank, device=device, events=len(rows))
    owners = _attribute(events, rank, device, [(r[0], r[1], (r[2], r[3])) for r in rows])
    open_: dict[int, Block] = {}
    running, best = 0, None
    for index, (eid, t, _pid, _tid, size, addr, total, reserved) in enumerate(rows):
        op = owners.get(eid)
        size = size or 0
        result.outside_op += op is None and size != 0
        running += size
        allocated = total if total is not None else running
        if best is None or allocated > best:
            best, result.peak_index, result.peak_t_ns = allocated, index, t
            result.peak_allocated, result.peak_reserved = allocated, reserved
        if size > 0:
            block = Block(size, t, index, op)
            result.blocks.append(block)
            if addr is not None:
                stale = open_.pop(addr, None)
                if stale is not None:  # its free was not recorded: closed by the reuse
                    stale.free_index, stale.free_t_ns, stale.lost_free = index, t, True
                open_[addr] = block
        elif size < 0:
            held = open_.pop(addr, None) if addr is not None else None
            if held is None:
                result.unmatched_frees.append((index, -size, op))
            else:
                held.free_index, held.free_t_ns, held.free_op = index, t, op
    if with_stacks:
        refs = [b.op for b in result.blocks if b.op] + [
            b.free_op for b in result.blocks if b.free_op
        ]
        refs += [op for _, _, op in result.unmatched_frees if op]
        result.stacks = _stacks(events, rank, device, refs)
    return result
