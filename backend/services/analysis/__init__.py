"""Analyses behind the trace views, computed on request from stored rows.

Public surface: `compute_roofline`, `compute_memory`, `compute_findings`, `compute_compare`,
`compute_operators`, `compute_stacks`.
"""

from backend.services.analysis.compare import compute_compare
from backend.services.analysis.findings import compute_findings
from backend.services.analysis.memory import compute_memory
from backend.services.analysis.op_stacks import compute_stacks
from backend.services.analysis.operators import compute_operators
from backend.services.analysis.roofline import compute_roofline

__all__ = [
    "compute_compare",
    "compute_findings",
    "compute_memory",
    "compute_operators",
    "compute_roofline",
    "compute_stacks",
]
