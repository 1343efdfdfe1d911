"""API shapes of the analyses: roofline, memory, findings and the A/B comparison.

Computed on request from stored events, kernel stats and the trace summary; no tables.
"""

from sqlmodel import SQLModel


class Roof(SQLModel):
    precision: str
    peak_flops_per_s: float


class RooflineDevice(SQLModel):
    index: int
    name: str
    peak_dram_bytes_per_s: float | None
    roofs: list[Roof]
    source: str
    source_url: str | None = None


class RooflinePoint(SQLModel):
    name: str
    op: str | None
    device: int | None
    precision: str
    count: int
    time_ns: int
    time_share: float
    flops: float
    bytes: float
    intensity: float
    flops_per_s: float
    bound: str | None
    estimated: bool
    # Nsight Compute points (issue #26): time-weighted hit rates over the point's launches,
    # and the memory level with the longest summed time at its peak bandwidth
    l1_hit_pct: float | None = None
    l2_hit_pct: float | None = None
    memory_bound_level: str | None = None


class RooflinePublic(SQLModel):
    trace_id: str
    kind: str
    note: str
    devices: list[RooflineDevice]
    points: list[RooflinePoint]
    covered_time_share: float


class MemorySeries(SQLModel):
    device: int
    rank: int | None = None
    t_ns: list[int]
    allocated: list[int]
    reserved: list[int | None]
    peak_allocated: int
    peak_allocated_t_ns: int
    peak_reserved: int | None
    peak_reserved_t_ns: int | None
    fragmentation_at_peak_pct: float | None
    fragmentation_max_pct: float | None
    samples: int


class MemoryPublic(SQLModel):
    trace_id: str
    start_ns: int | None
    devices: list[MemorySeries]
    source: str
    note: str


class Finding(SQLModel):
    rule: str
    severity: str
    text: str
    value: float
    unit: str


class FindingsPublic(SQLModel):
    trace_id: str
    items: list[Finding]


class KernelDelta(SQLModel):
    """One kernel (or several names matched as one) in A against B.

    `a`, `b` and `delta` are in the comparison's `basis`: ns per step (`per_step`), or
    percent of the trace's GPU kernel time (`share`). `count_*` and `total_ns_*` are the
    whole traces' raw launches and time, for reference only.
    """

    name: str
    key: str
    match: str  # "exact", "name" (template arguments stripped), "op" (launching op), "none"
    names_a: list[str]
    names_b: list[str]
    op: str | None = None  # the launching CPU op, for `match == "op"`
    count_a: int
    count_b: int
    total_ns_a: int
    total_ns_b: int
    a: float
    b: float
    delta: float
    delta_pct: float | None
    better: bool | None  # B is better; None for shares, whose moves say nothing by themselves
    status: str  # "changed", "new" (only in B) or "gone" (only in A)


class MetricDelta(SQLModel):
    metric: str
    label: str
    unit: str
    a: float | None
    b: float | None
    delta: float | None
    delta_pct: float | None


class CategoryDelta(SQLModel):
    """A time category (compute, communication, memcpy, memset, idle) or an overlap, in the
    comparison's basis: ns per step, or percent of the GPU span."""

    category: str
    label: str
    kind: str  # "category", "idle" or "overlap"
    a: float | None
    b: float | None
    delta: float | None
    delta_pct: float | None
    better: bool | None  # B is better; None without a change, or for a share of compute etc.


class HeadlineItem(SQLModel):
    """One of the biggest changes, ranked by |delta| in the basis; the same number as its bar."""

    kind: str  # "kernel", "category", "idle" or "overlap"
    key: str  # the kernel row's `key`, or the category's `category`
    label: str
    unit: str  # "ns/step", "% of kernel time" or "% of GPU span"
    a: float
    b: float
    delta: float
    delta_pct: float | None
    better: bool | None  # the row's `better`
    status: str | None = None  # a kernel row's `status` ("changed", "new", "gone")
    match: str | None = None  # a kernel row's `match`


class ComparePublic(SQLModel):
    a: str
    b: str
    a_name: str
    b_name: str
    basis: str  # "per_step" when both traces have steps, else "share"
    basis_note: str  # the basis in words, for the page and the report
    steps_a: int
    steps_b: int
    headline: list[HeadlineItem]
    metrics: list[MetricDelta]
    categories: list[CategoryDelta]
    kernels: list[KernelDelta]
    new_kernels: list[KernelDelta]
    gone_kernels: list[KernelDelta]
    markdown: str
