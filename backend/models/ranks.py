"""API shapes of the step breakdown, the per-rank breakdown and the collectives table.

Computed on request from stored events (`backend.services.analysis`); no tables.
"""

from sqlmodel import SQLModel


class GpuSplit(SQLModel):
    """A window's GPU time split exclusively: the five parts add up to `span_ns`
    (priority compute, communication, memcpy, memset; the rest is idle)."""

    span_ns: int
    compute_ns: int
    communication_ns: int
    memcpy_ns: int
    memset_ns: int
    idle_ns: int


class StepRow(GpuSplit):
    """One step on one rank and device: its window and how the GPU spent it."""

    step: int
    name: str
    rank: int | None
    device: int | None
    start_ns: int
    end_ns: int
    slowest: bool


class StepSpread(SQLModel):
    """Step times (one per step: its longest rank's window) and how far apart they are."""

    count: int
    p50_ns: int
    p95_ns: int
    min_ns: int
    max_ns: int
    max_over_min: float | None
    slowest_step: int


class StepBreakdownPublic(SQLModel):
    trace_id: str
    marker: str | None
    marker_source: str | None
    window: str  # "cpu" or "gpu": what a step's window is
    items: list[StepRow]
    spread: StepSpread | None
    rule: str


class RankRow(GpuSplit):
    """One rank's GPU span split, with comm/compute overlap and its collective wait."""

    rank: int | None
    devices: list[int]
    start_ns: int
    end_ns: int
    comm_compute_overlap_ns: int
    comm_compute_overlap_pct: float | None
    collective_wait_ns: int


class Straggler(SQLModel):
    """A rank whose compute stands out, and how long the others waited for it."""

    rank: int | None
    device: int | None  # set when the trace has no ranks and rows are devices
    compute_ns: int
    median_compute_ns: int
    excess_pct: float
    others_wait_ns: int
    message: str


class RanksPublic(SQLModel):
    trace_id: str
    world_size: int
    items: list[RankRow]
    stragglers: list[Straggler]
    rule: str


class CollectiveRow(SQLModel):
    """One collective type and message size, over every rank's instances."""

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


class CollectivesPublic(SQLModel):
    trace_id: str
    items: list[CollectiveRow]
    matched_instances: int
    unmatched_kernels: int
    rule: str
