"""Reading the analyses derived at ingest (`derive`), merged over a dataset's parts.

SQL passed here names a derived table as `{operators}`, `{rank_splits}`... (every name in
`layout.ANALYSIS_TABLES`): each is bound to a scan
of every part's file (`<table>-*.parquet`), so a query's `GROUP BY` merges the parts. A
dataset written before the tables is derived first, once (`derive.ensure_analyses`). A
trace that is not ready yet answers no rows, as `stored.read_events` does.

Public surface: `query_derived`.
"""

from collections.abc import Sequence
from typing import Any

from backend.models import Trace, TraceStatus
from backend.services.analysis.derive import ensure_analyses
from backend.services.datasets import ANALYSIS_TABLES, analysis_glob, events_file, query_file


def query_derived(trace: Trace, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """Run `sql` over the trace's derived tables; all rows (none while it is not ready).

    Raises:
        NotFoundError: a ready trace without a dataset (`events_file`).
    """
    if trace.dataset is None and trace.status != TraceStatus.READY:
        return []
    events = events_file(trace)
    ensure_analyses(events)
    for table in ANALYSIS_TABLES:
        glob = analysis_glob(events.parent, table).replace("'", "''")
        sql = sql.replace(f"{{{table}}}", f"read_parquet('{glob}')")
    return query_file(events, sql, params)
