"""Bulk loading of normalised events: the fastest path each database offers.

PostgreSQL gets `COPY ... FROM STDIN`; SQLite gets the driver's own `executemany` on
plain tuples. Both run on the caller's connection, so they share its transaction and a
failed ingest leaves no rows. SQLAlchemy's Core insert with dicts was 3-4x slower here
(docs/PERFORMANCE.md).

No producer thread: tried, and it made SQLite 3x slower, because every GIL-free
`sqlite3_step` handed the GIL to the parser for a whole switch interval (GIL convoy).

Public surface: `insert_events`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import Any

import orjson
from sqlalchemy.engine import Connection

from ingest import Event, EventKind

COLUMNS = (
    "trace_id", "kind", "name", "start_ns", "dur_ns", "rank", "device", "stream", "pid",
    "tid", "correlation", "args",
)  # fmt: skip
BATCH_SIZE = 20_000
_SQLITE_INSERT = (
    f"INSERT INTO events ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"
)
_PG_COPY = f"COPY events ({', '.join(COLUMNS)}) FROM STDIN"
Row = tuple[Any, ...]


def insert_events(
    conn: Connection,
    trace_id: str,
    events: Iterable[Event],
    *,
    on_batch: Callable[[int], None] | None = None,
) -> int:
    """Insert every event of `events` for `trace_id`; return how many were inserted.

    `on_batch(total_so_far)` is called after each batch (progress reporting).
    """
    dbapi = conn.connection.driver_connection
    rows = _rows(trace_id, events)
    total = 0
    if conn.dialect.name == "postgresql":
        cursor = dbapi.cursor()  # type: ignore[union-attr]
        while batch := list(islice(rows, BATCH_SIZE)):
            with cursor.copy(_PG_COPY) as copy:
                for row in batch:
                    copy.write_row(row)
            total += len(batch)
            if on_batch:
                on_batch(total)
        return total
    cursor = dbapi.cursor()  # type: ignore[union-attr]
    try:
        while batch := list(islice(rows, BATCH_SIZE)):
            cursor.executemany(_SQLITE_INSERT, batch)
            total += len(batch)
            if on_batch:
                on_batch(total)
    finally:
        cursor.close()
    return total


_KIND_TEXT = {kind: kind.value for kind in EventKind}  # Enum.value is a slow descriptor


def _rows(trace_id: str, events: Iterable[Event]) -> Iterator[Row]:
    dumps, kind_text = orjson.dumps, _KIND_TEXT
    for e in events:
        args = e.args
        yield (
            trace_id,
            kind_text[e.kind],
            e.name,
            e.start_ns,
            e.dur_ns,
            e.rank,
            e.device,
            e.stream,
            e.pid,
            e.tid,
            e.correlation,
            dumps(args).decode() if args else None,
        )
