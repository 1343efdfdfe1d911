"""Memory by op, derived once at ingest per (rank, device) for `memory_ops`.

`memory_blocks` pairs a device's allocations with their frees and gives each to its op;
here every device with memory events is summed by op (and by op and stack), both ways the
view groups, with the rows live at the device's peak, and the device's totals. Memory is
per rank and device, so nothing here crosses parts: the read side picks one device's rows.
`ord` keeps the order rows were first met, the tie break of the view's sorts.

Public surface: `memory_tables`, `OUTSIDE`, `KINDS`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from backend.services.analysis.memory_blocks import (
    Block,
    DeviceBlocks,
    OpRef,
    devices_with_memory,
    load_blocks,
)
from backend.services.analysis.stored import rows_table

OUTSIDE = "(outside any op)"
KINDS = {"cpu_op": "op", "annotation": "range"}
GROUPS = ("op", "stack")
OP_FIELDS = ("allocs", "alloc_bytes", "largest_alloc_bytes", "frees", "free_bytes",
             "held_bytes", "peak_bytes")  # fmt: skip
PEAK_FIELDS = ("allocations", "bytes", "largest_bytes")
DEVICE_FIELDS = ("events", "allocs", "alloc_bytes", "frees", "free_bytes", "unmatched_frees",
                 "unmatched_free_bytes", "outside_op_events", "peak_t_ns",
                 "peak_allocated_bytes", "peak_reserved_bytes", "live_allocations",
                 "live_bytes")  # fmt: skip
_WHERE = [
    pa.field("rank", pa.int32()),
    pa.field("device", pa.int64(), nullable=False),
    pa.field("group", pa.string(), nullable=False),
]
_ROW = [
    pa.field("ord", pa.int64(), nullable=False),
    pa.field("name", pa.string(), nullable=False),
    pa.field("kind", pa.string(), nullable=False),
    pa.field("stack", pa.list_(pa.string()), nullable=False),
]
MEMORY_OP_SCHEMA = pa.schema([*_WHERE, *_ROW, *(pa.field(f, pa.int64()) for f in OP_FIELDS)])
MEMORY_PEAK_SCHEMA = pa.schema([*_WHERE, *_ROW, *(pa.field(f, pa.int64()) for f in PEAK_FIELDS)])
MEMORY_DEVICE_SCHEMA = pa.schema([*_WHERE[:2], *(pa.field(f, pa.int64()) for f in DEVICE_FIELDS)])

Key = tuple[str, str, tuple[str, ...]]  # kind, name, stack


def _key(op: OpRef | None, blocks: DeviceBlocks, by_stack: bool) -> Key:
    if op is None:
        return ("none", OUTSIDE, ())
    return (KINDS[op.kind], op.name, blocks.stacks.get(op.id, ()) if by_stack else ())


def _live_at_peak(block: Block, peak: int) -> bool:
    return block.index <= peak and (block.free_index is None or block.free_index > peak)


def _op_rows(blocks: DeviceBlocks, by_stack: bool) -> dict[Key, list[int]]:
    """Per key: OP_FIELDS, in the order keys were first met."""
    rows: dict[Key, list[int]] = {}

    def row(key: Key) -> list[int]:
        if (found := rows.get(key)) is None:  # no throwaway list per event
            found = rows[key] = [0] * len(OP_FIELDS)
        return found

    for b in blocks.blocks:
        r = row(_key(b.op, blocks, by_stack))
        r[0] += 1
        r[1] += b.bytes
        r[2] = max(r[2], b.bytes)
        r[5] += b.bytes if b.free_index is None else 0
        r[6] += b.bytes if _live_at_peak(b, blocks.peak_index) else 0
        if b.free_index is not None and not b.lost_free:
            f = row(_key(b.free_op, blocks, by_stack))
            f[3] += 1
            f[4] += b.bytes
    for _, size, op in blocks.unmatched_frees:
        f = row(_key(op, blocks, by_stack))
        f[3] += 1
        f[4] += size
    return rows


def _peak_rows(blocks: DeviceBlocks, by_stack: bool) -> dict[Key, list[int]]:
    """Per key: PEAK_FIELDS of the blocks live at the peak."""
    rows: dict[Key, list[int]] = {}
    for b in blocks.blocks:
        if _live_at_peak(b, blocks.peak_index):
            r = rows.setdefault(_key(b.op, blocks, by_stack), [0, 0, 0])
            r[0] += 1
            r[1] += b.bytes
            r[2] = max(r[2], b.bytes)
    return rows


def _device_row(blocks: DeviceBlocks) -> tuple[Any, ...]:
    freed = [b for b in blocks.blocks if b.free_index is not None and not b.lost_free]
    unmatched = sum(s for _, s, _ in blocks.unmatched_frees)
    live = [b for b in blocks.blocks if _live_at_peak(b, blocks.peak_index)]
    return (
        blocks.rank, blocks.device, blocks.events, len(blocks.blocks),
        sum(b.bytes for b in blocks.blocks), len(freed) + len(blocks.unmatched_frees),
        sum(b.bytes for b in freed) + unmatched, len(blocks.unmatched_frees), unmatched,
        blocks.outside_op, blocks.peak_t_ns, blocks.peak_allocated, blocks.peak_reserved,
        len(live), sum(b.bytes for b in live),
    )  # fmt: skip


def memory_tables(events: Path) -> dict[str, pa.Table]:
    """The part's memory_ops, memory_peak and memory_devices tables."""
    ops: list[tuple[Any, ...]] = []
    peaks: list[tuple[Any, ...]] = []
    devices: list[tuple[Any, ...]] = []
    for rank, device in devices_with_memory(events):
        blocks = load_blocks(events, rank, device, with_stacks=True)
        for group in GROUPS:
            for out, rows in ((ops, _op_rows(blocks, group == "stack")),
                              (peaks, _peak_rows(blocks, group == "stack"))):  # fmt: skip
                out.extend(
                    (rank, device, group, i, key[1], key[0], list(key[2]), *values)
                    for i, (key, values) in enumerate(rows.items())
                )
        devices.append(_device_row(blocks))
    return {
        "memory_ops": rows_table(ops, MEMORY_OP_SCHEMA),
        "memory_peak": rows_table(peaks, MEMORY_PEAK_SCHEMA),
        "memory_devices": rows_table(devices, MEMORY_DEVICE_SCHEMA),
    }
