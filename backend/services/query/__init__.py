"""Query: read-only SQL over one trace's events, in a sandbox (issue #18).

The trace's dataset is exposed as documented views (`events`, `kernels`, `flows`,
`counters`, `copies`, `args`); a query is one SELECT run in a fresh, locked DuckDB
database under time, memory, row and concurrency limits.
"""

from backend.services.query.run import get_query_schema, run_query

__all__ = ["get_query_schema", "run_query"]
