"""API shapes of the Nsight Compute sections view (`/traces/{id}/ncu`, issue #21 §5).

Computed on request from the kernel events of an ncu upload; no tables.
"""

from sqlmodel import SQLModel


class NcuValue(SQLModel):
    """One number of a view block, with the ncu metric it was read from."""

    label: str
    value: float
    metric: str


class NcuOccupancy(SQLModel):
    theoretical_pct: float | None
    achieved_pct: float | None
    theoretical_warps_per_sm: float | None
    achieved_warps_per_sm: float | None
    waves_per_sm: float | None
    block_limits: list[NcuValue]
    limiters: list[str]


class NcuMemoryLevel(SQLModel):
    level: str
    read_bytes: float | None
    write_bytes: float | None
    total_bytes: float | None
    metrics: list[str]


class NcuRule(SQLModel):
    section: str
    name: str
    type: str
    description: str
    speedup_type: str | None
    speedup_pct: float | None


class NcuSectionMetric(SQLModel):
    name: str
    unit: str
    value: float | None
    text: str | None


class NcuSection(SQLModel):
    name: str
    metrics: list[NcuSectionMetric]
    rules: list[NcuRule]


class NcuLevelTime(SQLModel):
    """One level of the memory hierarchy: its bytes and the time they take at its peak."""

    level: str  # DRAM, L2 or L1
    bytes: float | None
    peak_bytes_per_s: float | None
    time_ns: float | None  # bytes / peak bandwidth
    pct_of_duration: float | None  # time_ns over the launch's duration: the level's % of peak
    peak_metrics: list[str]  # the peak bytes-per-cycle metric and the clock it was read from


class NcuHierarchy(SQLModel):
    """L1/TEX and L2 hit rates and the level that bounds the memory traffic (issue #26)."""

    l1_hit_pct: float | None  # l1tex__t_sector_hit_rate.pct
    l2_hit_pct: float | None  # lts__t_sector_hit_rate.pct
    levels: list[NcuLevelTime]
    bound_level: str | None  # the longest time_ns; None unless two levels have one


class NcuKernel(SQLModel):
    ncu_id: int | None
    name: str
    device: int | None
    duration_ns: int
    invocations: int | None
    grid: list[int] | None
    block: list[int] | None
    speed_of_light: list[NcuValue]
    occupancy: NcuOccupancy | None
    memory: list[NcuMemoryLevel]
    hierarchy: NcuHierarchy | None  # hit rates and the bounding level, when the file has them
    stalls: list[NcuValue]
    stall_unit: str | None
    rules: list[NcuRule]
    sections: list[NcuSection]


class NcuSectionsPublic(SQLModel):
    trace_id: str
    page: str | None
    note: str
    total: int
    kernels: list[NcuKernel]
