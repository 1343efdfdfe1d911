"""Which rocprof table a CSV is, from its header alone (file names are often renamed).

rocprof v1, rocprofv2, rocprofv3 and rocprof-compute each write their own column sets, and
each version changed them (FORMATS.md §4); the signatures below use only columns that every
known version of that table has.
"""

from __future__ import annotations

from enum import StrEnum


class Table(StrEnum):
    """A rocprof CSV table kind."""

    DISPATCHES = (
        "dispatches"  # v1 results.csv, v2 kernel trace, rocprof-compute timestamps/pmc_perf
    )
    STATS = "stats"  # v1 results.stats.csv, v3 *_stats.csv
    V2_API = "v2_api"
    V2_ASYNC = "v2_async"
    V2_ROCTX = "v2_roctx"
    V3_KERNELS = "v3_kernels"
    V3_COPIES = "v3_copies"
    V3_ALLOCATIONS = "v3_allocations"
    V3_API = "v3_api"
    V3_COUNTERS = "v3_counters"
    V3_AGENTS = "v3_agents"
    V3_SCRATCH = "v3_scratch"
    ROOFLINE = "roofline"
    SYSINFO = "sysinfo"
    ANALYSIS = "analysis"  # rocprof-compute tables that are no trace (`ANALYSIS_NOTE`)


V3_TABLES = frozenset(
    {
        Table.V3_KERNELS, Table.V3_COPIES, Table.V3_ALLOCATIONS, Table.V3_API,
        Table.V3_COUNTERS, Table.V3_AGENTS, Table.V3_SCRATCH,
    }
)  # fmt: skip
V2_TABLES = frozenset({Table.V2_API, Table.V2_ASYNC, Table.V2_ROCTX})
ANALYSIS_NOTE = (
    "a rocprof-compute table that is no trace (its kernel summary, its dispatch list, or a "
    "counter pass that matched no dispatch): skipped"
)
# pmc_kernel_top.csv (the analysis's top kernels), pmc_dispatch_info.csv (the dispatch list),
# and the header-only pmc_perf_<n>.csv / <counter>.csv of a pass that matched no dispatch.
_ANALYSIS_HEADERS = (
    ("Kernel_Name", "Count", "Sum(ns)"),
    ("Dispatch_ID", "Kernel_Name", "GPU_ID"),
    ("Dispatch_ID", "Kernel_Name"),
)


def classify(header: list[str]) -> Table | None:
    """Return the table kind of a CSV header, or None when it is no rocprof table.

    >>> classify(["Name", "Calls", "TotalDurationNs", "AverageNs", "Percentage"])
    <Table.STATS: 'stats'>
    >>> classify(["Index", "KernelName", "gpu-id", "queue-id"])
    <Table.DISPATCHES: 'dispatches'>
    >>> classify(["Kernel_Name", "Count", "Sum(ns)", "Mean(ns)"])
    <Table.ANALYSIS: 'analysis'>
    >>> classify(["a", "b"]) is None
    True
    """
    h = set(header)
    if tuple(header[:3]) == _ANALYSIS_HEADERS[0] or tuple(header) in _ANALYSIS_HEADERS[1:]:
        return Table.ANALYSIS
    if header[:3] == ["Name", "Calls", "TotalDurationNs"]:
        return Table.STATS
    if "Counter_Name" in h and "Counter_Value" in h:
        return Table.V3_COUNTERS
    if "Kind" in h and "Grid_Size_X" in h:
        return Table.V3_KERNELS
    if "Direction" in h and "Source_Agent_Id" in h:
        return Table.V3_COPIES
    if "Allocation_Size" in h:
        return Table.V3_ALLOCATIONS
    if "Agent_Type" in h and "Logical_Node_Id" in h:
        return Table.V3_AGENTS
    if "Kind" in h and "Operation" in h and "Alloc_Flags" in h:
        return Table.V3_SCRATCH
    if header[:2] == ["Domain", "Function"]:
        return Table.V3_API if "Process_Id" in h else Table.V2_API
    if header[:2] == ["Domain", "Operation"] and "Stop_Timestamp" in h:
        return Table.V2_ASYNC
    if header[:2] == ["Domain", "ROCTX_ID"]:
        return Table.V2_ROCTX
    if ("KernelName" in h or "Kernel_Name" in h) and ("gpu-id" in h or "GPU_ID" in h):
        return Table.DISPATCHES
    if "HBMBw" in h or "FP32Flops" in h:
        return Table.ROOFLINE
    if "gpu_model" in h or "gpu_arch" in h:
        return Table.SYSINFO
    return None
