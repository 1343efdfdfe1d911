"""The Nsight Compute sections call (`/traces/{id}/ncu`) and its response shapes.

Public surface: `get_ncu_sections` and the TypedDicts it returns.
"""

from __future__ import annotations

from typing import TypedDict, cast

from dashboard.api.client import ApiClient

__all__ = [
    "NcuHierarchy",
    "NcuKernel",
    "NcuLevelTime",
    "NcuMemoryLevel",
    "NcuOccupancy",
    "NcuRule",
    "NcuSection",
    "NcuSectionMetric",
    "NcuSections",
    "NcuValue",
    "get_ncu_sections",
]


class NcuValue(TypedDict):
    label: str
    value: float
    metric: str


class NcuOccupancy(TypedDict):
    theoretical_pct: float | None
    achieved_pct: float | None
    theoretical_warps_per_sm: float | None
    achieved_warps_per_sm: float | None
    waves_per_sm: float | None
    block_limits: list[NcuValue]
    limiters: list[str]


class NcuMemoryLevel(TypedDict):
    level: str
    read_bytes: float | None
    write_bytes: float | None
    total_bytes: float | None
    metrics: list[str]


class NcuRule(TypedDict):
    section: str
    name: str
    type: str
    description: str
    speedup_type: str | None
    speedup_pct: float | None


class NcuSectionMetric(TypedDict):
    name: str
    unit: str
    value: float | None
    text: str | None


class NcuSection(TypedDict):
    name: str
    metrics: list[NcuSectionMetric]
    rules: list[NcuRule]


class NcuLevelTime(TypedDict):
    level: str
    bytes: float | None
    peak_bytes_per_s: float | None
    time_ns: float | None
    pct_of_duration: float | None
    peak_metrics: list[str]


class NcuHierarchy(TypedDict):
    l1_hit_pct: float | None
    l2_hit_pct: float | None
    levels: list[NcuLevelTime]
    bound_level: str | None


class NcuKernel(TypedDict):
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
    hierarchy: NcuHierarchy | None
    stalls: list[NcuValue]
    stall_unit: str | None
    rules: list[NcuRule]
    sections: list[NcuSection]


class NcuSections(TypedDict):
    trace_id: str
    page: str | None
    note: str
    total: int
    kernels: list[NcuKernel]


def get_ncu_sections(client: ApiClient, trace_id: str, limit: int = 200) -> NcuSections:
    """Every launch's sections, in file order (`NcuSectionsPublic`)."""
    return cast(NcuSections, client.get(f"/traces/{trace_id}/ncu", params={"limit": limit}))
