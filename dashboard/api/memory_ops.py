"""API calls of the Memory tab's by-op tables: `/memory/ops` and `/memory/peak`.

Public surface: `get_memory_ops`, `get_memory_peak`, `MemoryOps`, `MemoryOpRow`,
`MemoryPeak`, `MemoryPeakRow`, `MemoryDevice`.
"""

from __future__ import annotations

from typing import Any, TypedDict

from dashboard.api.client import ApiClient

__all__ = [
    "MemoryDevice",
    "MemoryOpRow",
    "MemoryOps",
    "MemoryPeak",
    "MemoryPeakRow",
    "get_memory_ops",
    "get_memory_peak",
]


class MemoryDevice(TypedDict):
    rank: int | None
    device: int


class MemoryOpRow(TypedDict):
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


class MemoryOps(TypedDict):
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


class MemoryPeakRow(TypedDict):
    name: str
    kind: str
    stack: list[str]
    allocations: int
    bytes: int
    largest_bytes: int
    share_pct: float


class MemoryPeak(TypedDict):
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


def _params(device: int | None, group: str, **more: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"group": group, **more}
    if device is not None:
        params["device"] = device
    return params


def get_memory_ops(
    client: ApiClient,
    trace_id: str,
    device: int | None = None,
    group: str = "op",
    sort: str = "alloc_bytes",
    limit: int = 50,
) -> MemoryOps:
    """Per op: allocations, frees, held at the end and at the peak, `sort`ed largest first."""
    body: MemoryOps = client.get(
        f"/traces/{trace_id}/memory/ops", params=_params(device, group, sort=sort, limit=limit)
    )
    return body


def get_memory_peak(
    client: ApiClient, trace_id: str, device: int | None = None, group: str = "op", limit: int = 50
) -> MemoryPeak:
    """The live allocations at the device's peak, by op, largest first."""
    body: MemoryPeak = client.get(
        f"/traces/{trace_id}/memory/peak", params=_params(device, group, limit=limit)
    )
    return body
