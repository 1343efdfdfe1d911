"""API calls of the Ranges tab: `/traces/{id}/ranges`, `/ranges/durations` and `/graphs`.

The TypedDicts mirror `backend.models.ranges` (checked by tests/dashboard/test_api_contract.py).

Public surface: `get_ranges`, `get_range_durations`, `get_graphs`, and the TypedDicts.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from dashboard.api.client import ApiClient

__all__ = [
    "GraphKernel",
    "GraphReplay",
    "GraphStat",
    "Graphs",
    "RangeDurations",
    "RangeStat",
    "Ranges",
    "get_graphs",
    "get_range_durations",
    "get_ranges",
]

Side = Literal["cpu", "gpu"]


class RangeStat(TypedDict):
    name: str
    domain: str | None
    style: str | None
    side: Side
    count: int
    total_ns: int
    avg_ns: float
    med_ns: float
    min_ns: int
    max_ns: int
    std_ns: float
    time_pct: float


class Ranges(TypedDict):
    trace_id: str
    items: list[RangeStat]
    total: int
    note: str


class RangeDurations(TypedDict):
    trace_id: str
    name: str
    domain: str | None
    side: Side
    start_ns: list[int]
    dur_ns: list[int]
    count: int


class GraphKernel(TypedDict):
    name: str
    count: int
    total_ns: int


class GraphReplay(TypedDict):
    launch_id: int
    correlation: int
    rank: int | None
    device: int | None
    launch_start_ns: int
    start_ns: int
    span_ns: int
    gpu_ns: int
    kernels: int
    nodes: int
    top_kernels: list[GraphKernel]


class GraphStat(TypedDict):
    graph: int
    graph_id: int | None
    node_ids: int
    launches: int
    kernels_per_replay: float
    nodes_per_replay: float
    gpu_ns_total: int
    gpu_ns_avg: float
    span_ns_avg: float
    span_ns_min: int
    span_ns_max: int
    top_kernels: list[GraphKernel]
    replays: list[GraphReplay]


class Graphs(TypedDict):
    trace_id: str
    graphs: list[GraphStat]
    launches: int
    unattributed_nodes: int
    note: str


def get_ranges(client: ApiClient, trace_id: str) -> Ranges:
    """Every range row (NVTX / record_function), CPU side first, by total time."""
    body: Ranges = client.get(f"/traces/{trace_id}/ranges")
    return body


def get_range_durations(
    client: ApiClient, trace_id: str, name: str, domain: str | None, side: str
) -> RangeDurations:
    """Start and duration of each instance of one range."""
    params: dict[str, Any] = {"name": name, "side": side}
    if domain is not None:
        params["domain"] = domain
    body: RangeDurations = client.get(f"/traces/{trace_id}/ranges/durations", params=params)
    return body


def get_graphs(client: ApiClient, trace_id: str) -> Graphs:
    """CUDA graphs with their replays."""
    body: Graphs = client.get(f"/traces/{trace_id}/graphs")
    return body
