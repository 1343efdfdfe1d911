"""Analyses behind the trace views, computed on request from stored rows.

Public surface: `compute_roofline`, `compute_memory`, `compute_findings`, `compute_compare`,
`compute_ranges`, `compute_range_durations`, `compute_graphs`.
"""

from backend.services.analysis.compare import compute_compare
from backend.services.analysis.findings import compute_findings
from backend.services.analysis.graphs import compute_graphs
from backend.services.analysis.memory import compute_memory
from backend.services.analysis.ranges import compute_range_durations, compute_ranges
from backend.services.analysis.roofline import compute_roofline

__all__ = [
    "compute_compare",
    "compute_findings",
    "compute_graphs",
    "compute_memory",
    "compute_range_durations",
    "compute_ranges",
    "compute_roofline",
]
