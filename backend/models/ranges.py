"""API shapes of the ranges view (NVTX and `record_function` ranges) and the CUDA graphs view.

Computed on request from stored events (`backend.services.analysis.ranges`, `.graphs`).
"""

from typing import Literal

from sqlmodel import SQLModel

Side = Literal["cpu", "gpu"]


class RangeStat(SQLModel):
    """One range name, as a row of `nsys stats --report nvtx_sum`."""

    name: str
    domain: str | None
    style: str | None  # nsys: PushPop or StartEnd; torch ranges have none
    side: Side  # gpu: torch's `gpu_user_annotation` (the range's span on the GPU)
    count: int
    total_ns: int
    avg_ns: float
    med_ns: float
    min_ns: int
    max_ns: int
    std_ns: float  # sample standard deviation, 0 for one instance
    time_pct: float  # share of the total of all ranges on the same side


class RangesPublic(SQLModel):
    trace_id: str
    items: list[RangeStat]
    total: int  # range names before `limit`
    note: str


class RangeDurationsPublic(SQLModel):
    trace_id: str
    name: str
    domain: str | None
    side: Side
    start_ns: list[int]
    dur_ns: list[int]
    count: int  # instances, of which at most `limit` are listed (the longest)


class GraphKernel(SQLModel):
    name: str
    count: int
    total_ns: int


class GraphReplay(SQLModel):
    launch_id: int  # the event id of the cudaGraphLaunch call
    correlation: int
    rank: int | None
    device: int | None
    launch_start_ns: int
    start_ns: int  # first GPU work of the replay
    span_ns: int  # last end - first start on the GPU
    gpu_ns: int  # summed durations of the replay's kernels, copies and memsets
    kernels: int
    nodes: int  # kernels + memcpy + memset
    top_kernels: list[GraphKernel]


class GraphStat(SQLModel):
    graph: int  # numbered 1.. by first launch
    graph_id: int | None  # the profiler's own id where it records one (torch `graph id`)
    node_ids: int  # distinct graph node ids seen on its GPU work (0 when not recorded)
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


class GraphsPublic(SQLModel):
    trace_id: str
    graphs: list[GraphStat]
    launches: int  # graph launch calls in the trace (some may have launched no traced work)
    unattributed_nodes: int  # GPU work with a graph node id but no graph launch found
    note: str
