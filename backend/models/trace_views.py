"""API shapes of the trace views: roofline, memory, findings and the A/B comparison.

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
    name: str
    key: str
    count_a: int
    count_b: int
    total_ns_a: int
    total_ns_b: int
    delta_ns: int
    delta_pct: float | None
    status: str


class MetricDelta(SQLModel):
    metric: str
    label: str
    unit: str
    a: float | None
    b: float | None
    delta: float | None
    delta_pct: float | None


class ComparePublic(SQLModel):
    a: str
    b: str
    a_name: str
    b_name: str
    metrics: list[MetricDelta]
    kernels: list[KernelDelta]
    new_kernels: list[KernelDelta]
    gone_kernels: list[KernelDelta]
    markdown: str
