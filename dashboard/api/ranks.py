"""API calls of the Steps and Ranks tabs (`/steps/breakdown`, `/ranks`, `/collectives`),
and their response shapes.

Public surface: `get_step_breakdown`, `get_ranks`, `get_collectives`, and the TypedDicts
they return.
"""

from __future__ import annotations

from typing import TypedDict, cast

from dashboard.api.client import ApiClient

__all__ = [
    "CollectiveRow",
    "Collectives",
    "RankRow",
    "Ranks",
    "StepBreakdown",
    "StepRow",
    "StepSpread",
    "Straggler",
    "get_collectives",
    "get_ranks",
    "get_step_breakdown",
]


class StepRow(TypedDict):
    step: int
    name: str
    rank: int | None
    device: int | None
    start_ns: int
    end_ns: int
    span_ns: int
    compute_ns: int
    communication_ns: int
    memcpy_ns: int
    memset_ns: int
    idle_ns: int
    slowest: bool


class StepSpread(TypedDict):
    count: int
    p50_ns: int
    p95_ns: int
    min_ns: int
    max_ns: int
    max_over_min: float | None
    slowest_step: int


class StepBreakdown(TypedDict):
    trace_id: str
    marker: str | None
    marker_source: str | None
    window: str
    items: list[StepRow]
    spread: StepSpread | None
    rule: str


class RankRow(TypedDict):
    rank: int | None
    devices: list[int]
    start_ns: int
    end_ns: int
    span_ns: int
    compute_ns: int
    communication_ns: int
    memcpy_ns: int
    memset_ns: int
    idle_ns: int
    comm_compute_overlap_ns: int
    comm_compute_overlap_pct: float | None
    collective_wait_ns: int


class Straggler(TypedDict):
    rank: int | None
    device: int | None
    compute_ns: int
    median_compute_ns: int
    excess_pct: float
    others_wait_ns: int
    message: str


class Ranks(TypedDict):
    trace_id: str
    world_size: int
    items: list[RankRow]
    stragglers: list[Straggler]
    rule: str


class CollectiveRow(TypedDict):
    collective: str
    msg_bytes: int | None
    dtype: str | None
    group_size: int | None
    algorithm: str | None
    protocol: str | None
    count: int
    ranks: int
    total_ns: int
    avg_ns: int
    algbw_gbps: float | None
    busbw_gbps: float | None
    busbw_factor: float | None
    wait_ns: int


class Collectives(TypedDict):
    trace_id: str
    items: list[CollectiveRow]
    matched_instances: int
    unmatched_kernels: int
    rule: str


def get_step_breakdown(client: ApiClient, trace_id: str, window: str = "cpu") -> StepBreakdown:
    """Per step and rank: the GPU split of the step's window ("cpu" or "gpu"), and the step
    time spread."""
    path = f"/traces/{trace_id}/steps/breakdown"
    return cast(StepBreakdown, client.get(path, params={"window": window}))


def get_ranks(client: ApiClient, trace_id: str) -> Ranks:
    """Per rank: the GPU split of its span, overlap, collective wait; the stragglers."""
    return cast(Ranks, client.get(f"/traces/{trace_id}/ranks"))


def get_collectives(client: ApiClient, trace_id: str) -> Collectives:
    """Per collective and message size: count, time, bandwidths and wait."""
    return cast(Collectives, client.get(f"/traces/{trace_id}/collectives"))
