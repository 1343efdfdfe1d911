"""Pure layout builders shared by pages; they take API dicts and return Dash components.

Public surface: `status_badge`, `notice`, `traces_table`, `kernel_table`, `trace_summary`.
"""

from __future__ import annotations

from dashboard.components.kernel_table import kernel_table
from dashboard.components.status_badge import notice, status_badge
from dashboard.components.trace_summary import trace_summary
from dashboard.components.traces_table import traces_table

__all__ = ["kernel_table", "notice", "status_badge", "trace_summary", "traces_table"]
