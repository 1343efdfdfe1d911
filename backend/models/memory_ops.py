"""Memory by op: `/traces/{id}/memory/ops` and `/traces/{id}/memory/peak` (issue #21 §7).

Bytes are the allocator's (`[memory]` events' `Bytes`); times are absolute ns, like every
event's `start_ns`. A row is an op (`kind` "op": a `cpu_op`), a `record_function` range
("range") or the memory events inside neither ("none"); `stack` is its Python frames
(outermost first) when the rows are grouped by stack, else empty.
"""

from typing import Literal

from sqlmodel import SQLModel

MemoryOpsSort = Literal[
    "alloc_bytes", "allocs", "free_bytes", "self_net_bytes", "held_bytes", "peak_bytes", "name"
]


class MemoryDevice(SQLModel):
    """A device with memory events; `device` -1 is host memory."""

    rank: int | None
    device: int


class MemoryOpRow(SQLModel):
    """What one op (or op and stack) did to the device's memory.

    `alloc_bytes` and `free_bytes` are the allocations and frees made inside the op;
    `self_net_bytes` is their difference (torch's `self_device_memory_usage`).
    `held_bytes` is what of its own allocations was never freed in the trace, `peak_bytes`
    what of them was live at the device's peak.
    """

    name: str
    kind: str
    stack: list[str]
    allocs: int
    alloc_bytes: int
    largest_alloc_bytes: int
    frees: int
    free_bytes: int
    self_net_bytes: int
    held_bytes: int
    peak_bytes: int


class MemoryOpsPublic(SQLModel):
    trace_id: str
    rank: int | None
    device: int | None
    devices: list[MemoryDevice]
    group: str
    sort: str
    has_stacks: bool
    events: int
    allocs: int
    alloc_bytes: int
    frees: int
    free_bytes: int
    unmatched_frees: int
    unmatched_free_bytes: int
    outside_op_events: int
    count: int
    items: list[MemoryOpRow]
    note: str


class MemoryPeakRow(SQLModel):
    """The allocations one op (or op and stack) made that were live at the peak."""

    name: str
    kind: str
    stack: list[str]
    allocations: int
    bytes: int
    largest_bytes: int
    share_pct: float


class MemoryPeakPublic(SQLModel):
    """The live allocations at the device's peak of allocated memory, by op.

    `before_trace_bytes` was allocated before the profiler started (peak allocated minus
    the live blocks the trace saw allocated), so no op in the trace owns it.
    """

    trace_id: str
    rank: int | None
    device: int | None
    devices: list[MemoryDevice]
    group: str
    has_stacks: bool
    peak_t_ns: int | None
    peak_allocated_bytes: int
    peak_reserved_bytes: int | None
    live_allocations: int
    live_bytes: int
    before_trace_bytes: int
    count: int
    items: list[MemoryPeakRow]
    note: str
