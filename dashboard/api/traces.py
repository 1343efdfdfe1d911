"""Trace API calls and their response shapes, built on `ApiClient.get` (and `delete`).

Uploads do not pass here: the browser posts them to the API itself
(dashboard/assets/upload/), which reads the answer as a `TraceAccepted` (its shape is
checked against the API's schema here, in tests/dashboard/test_api_contract.py).

Public surface: `list_traces`, `get_trace`, `get_kernels`, `delete_trace`, and the
TypedDicts they return (`Trace`, `TraceList`, `KernelStat`, `KernelStats`, `TraceAccepted`).
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict, cast

from dashboard.api.client import ApiClient

__all__ = [
    "Device",
    "KernelStat",
    "KernelStats",
    "Trace",
    "TraceAccepted",
    "TraceList",
    "TraceStatus",
    "delete_trace",
    "get_kernels",
    "get_trace",
    "list_traces",
]

TraceStatus = Literal["queued", "processing", "ready", "failed"]


class Device(TypedDict, total=False):
    index: int
    name: str
    rank: int  # in a multi-rank trace


class Trace(TypedDict):
    id: str
    name: str
    project: str
    status: TraceStatus
    error: str | None
    format: str | None
    blob_sha256: str
    size_bytes: int
    event_counts: dict[str, int]
    devices: list[Device]
    meta: dict[str, Any]
    skipped_events: int
    warnings: list[str]
    duration_ns: int | None
    progress: NotRequired[dict[str, Any] | None]
    created_at: str
    updated_at: str


class TraceList(TypedDict):
    items: list[Trace]
    count: int


class KernelStat(TypedDict):
    name: str
    count: int
    total_ns: int
    mean_ns: int
    min_ns: int
    max_ns: int
    pct: float


class KernelStats(TypedDict):
    trace_id: str
    items: list[KernelStat]
    count: int
    total_kernel_ns: int


class TraceAccepted(TypedDict):
    id: str
    status: TraceStatus
    duplicate: bool


def list_traces(client: ApiClient, *, limit: int = 50, offset: int = 0) -> TraceList:
    """Traces, newest first."""
    return cast(TraceList, client.get("/traces", params={"limit": limit, "offset": offset}))


def get_trace(client: ApiClient, trace_id: str) -> Trace:
    """One trace with its status, error and summary."""
    return cast(Trace, client.get(f"/traces/{trace_id}"))


def get_kernels(client: ApiClient, trace_id: str, limit: int = 10) -> KernelStats:
    """The `limit` kernels with the most total GPU time (one row per kernel name)."""
    path = f"/traces/{trace_id}/kernels"
    return cast(KernelStats, client.get(path, params={"limit": limit}))


def delete_trace(client: ApiClient, trace_id: str) -> None:
    """Delete a trace and everything derived from it."""
    client.delete(f"/traces/{trace_id}")
