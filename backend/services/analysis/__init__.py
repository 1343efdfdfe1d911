"""Analyses behind the trace views, computed on request from stored rows.

Public surface: `compute_roofline`, `compute_memory`, `compute_findings`, `compute_compare`,
`compute_ranges`, `compute_range_durations`, `compute_graphs`, `compute_step_breakdown`,
`compute_ranks`, `compute_collectives`, `compute_ncu_sections`, `compute_memory_ops`,
`compute_memory_peak`, `compute_operators`,
`compute_stacks`, `compute_compile`, `read_snapshot_summary`, `read_snapshot_segments`,
`read_snapshot_fragmentation`, `read_snapshot_timeline`, `read_snapshot_stacks`,
`read_snapshot_phases`, `derive_analyses` (the tables the analyses answer from, written
at ingest).
"""

from backend.services.analysis.collectives import compute_collectives
from backend.services.analysis.compare import compute_compare
from backend.services.analysis.compile_phases import compute_compile
from backend.services.analysis.derive import derive_analyses
from backend.services.analysis.findings import compute_findings
from backend.services.analysis.graphs import compute_graphs
from backend.services.analysis.memory import compute_memory
from backend.services.analysis.memory_ops import compute_memory_ops, compute_memory_peak
from backend.services.analysis.memory_snapshot import (
    read_snapshot_fragmentation,
    read_snapshot_phases,
    read_snapshot_segments,
    read_snapshot_stacks,
    read_snapshot_summary,
    read_snapshot_timeline,
)
from backend.services.analysis.ncu_sections import compute_ncu_sections
from backend.services.analysis.op_stacks import compute_stacks
from backend.services.analysis.operators import compute_operators
from backend.services.analysis.ranges import compute_range_durations, compute_ranges
from backend.services.analysis.ranks import compute_ranks
from backend.services.analysis.roofline import compute_roofline
from backend.services.analysis.step_breakdown import compute_step_breakdown

__all__ = [
    "compute_collectives",
    "compute_compare",
    "compute_compile",
    "compute_findings",
    "compute_graphs",
    "compute_memory",
    "compute_memory_ops",
    "compute_memory_peak",
    "compute_ncu_sections",
    "compute_operators",
    "compute_range_durations",
    "compute_ranges",
    "compute_ranks",
    "compute_roofline",
    "compute_stacks",
    "compute_step_breakdown",
    "derive_analyses",
    "read_snapshot_fragmentation",
    "read_snapshot_phases",
    "read_snapshot_segments",
    "read_snapshot_stacks",
    "read_snapshot_summary",
    "read_snapshot_timeline",
]
