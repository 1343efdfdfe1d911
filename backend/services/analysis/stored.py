"""Reading a trace's stored events for an analysis (`backend.services.datasets`).

A trace that is not ready yet (queued, processing, failed) has no events, so its analyses
answer empty rather than fail; a ready trace without a dataset raises the reader's error,
which says to re-index it.

Public surface: `read_events`, `read_events_file`, `json_int`, `rows_table`, `counts`.
"""

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from backend.models import Trace, TraceStatus
from backend.services.datasets import query_events, query_file


def read_events(trace: Trace, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """`query_events`, or no rows while the trace's events are not stored."""
    if trace.dataset is None and trace.status != TraceStatus.READY:
        return []
    return query_events(trace, sql, params)


def read_events_file(path: Path, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """`sql` over exactly this events file, which need not be its dataset's
    `events.parquet`: one part of a partitioned ingest, as an analysis is derived."""
    quoted = str(path).replace("'", "''")
    return query_file(path, sql.replace("{events}", f"read_parquet('{quoted}')"), params)


def json_int(key: str) -> str:
    """DuckDB SQL for the integer at `args[key]` (a key written in this code, no quotes in
    it), NULL when it is absent or not an integer (a parser writes counts and ids as JSON
    integers; a float or string there is not one)."""
    path = f'$."{key}"'
    return (
        f"CASE WHEN json_type(args, '{path}') IN ('BIGINT', 'UBIGINT') "
        f"THEN TRY_CAST(args ->> '{path}' AS BIGINT) END"
    )


def rows_table(rows: Sequence[Sequence[Any]], schema: pa.Schema) -> pa.Table:
    """Rows of Python values (tuples in `schema` order) as an Arrow table of `schema`: how
    the analyses derived at ingest are written."""
    columns: list[Sequence[Any]] = list(zip(*rows, strict=True)) if rows else [[] for _ in schema]
    arrays = [pa.array(c, type=f.type) for c, f in zip(columns, schema, strict=True)]
    return pa.Table.from_arrays(arrays, schema=schema)


def counts(*names: str) -> list[pa.Field]:
    """Non-null int64 fields (counts, ns, bytes) of a derived table's schema."""
    return [pa.field(name, pa.int64(), nullable=False) for name in names]
