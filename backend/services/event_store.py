"""Bulk loading of normalised events: one row tuple per event, written through
`backend.core.bulk_insert` (COPY on PostgreSQL, raw executemany on SQLite) on the caller's
connection, so a failed ingest leaves no rows.

Event ids are assigned here, not by the database, so that whatever is computed from the
rows while they are written (the timeline index) knows each event's id without reading
the events back: on SQLite the ids follow the table's largest id (the ingest transaction
holds SQLite's write lock from its first DELETE on); on PostgreSQL they are drawn from the
table's own sequence, a batch at a time, so concurrent ingests never collide.

Public surface: `insert_events`, `COLUMNS`, `Row`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from itertools import chain, count
from typing import Any

import orjson
from sqlalchemy.engine import Connection

from backend.core.bulk_insert import BATCH_SIZE, bulk_insert
from ingest import Event, EventKind

COLUMNS = (
    "id", "trace_id", "kind", "name", "start_ns", "dur_ns", "rank", "device", "stream", "pid",
    "tid", "correlation", "args",
)  # fmt: skip
Row = tuple[Any, ...]


def insert_events(
    conn: Connection,
    trace_id: str,
    events: Iterable[Event],
    *,
    on_batch: Callable[[int], None] | None = None,
    sink: Callable[[list[Row]], None] | None = None,
) -> int:
    """Insert every event of `events` for `trace_id`; return how many were inserted.

    `on_batch(total_so_far)` is called after each batch (progress reporting); `sink(rows)`
    receives each batch of written rows (`COLUMNS` order, ids included).
    """
    rows = _rows(trace_id, events, _new_ids(conn))
    return bulk_insert(conn, "events", COLUMNS, rows, on_batch=on_batch, sink=sink)


def _new_ids(conn: Connection) -> Iterator[int]:
    """Unused event ids, in increasing order."""
    if conn.dialect.name != "postgresql":
        largest = conn.exec_driver_sql("SELECT coalesce(max(id), 0) FROM events").scalar()
        return count(int(largest or 0) + 1)
    return chain.from_iterable(_sequence_blocks(conn))


def _sequence_blocks(conn: Connection) -> Iterator[list[int]]:
    """Blocks of `BATCH_SIZE` values of the events' id sequence (one query per block)."""
    sql = (
        "SELECT nextval(pg_get_serial_sequence('events', 'id')) "
        f"FROM generate_series(1, {BATCH_SIZE})"
    )
    while True:
        yield [i for (i,) in conn.exec_driver_sql(sql)]


_KIND_TEXT = {kind: kind.value for kind in EventKind}  # Enum.value is a slow descriptor


def _rows(trace_id: str, events: Iterable[Event], ids: Iterator[int]) -> Iterator[Row]:
    dumps, kind_text = orjson.dumps, _KIND_TEXT
    for e, event_id in zip(events, ids, strict=False):  # events first: no id drawn past the last
        args = e.args
        yield (
            event_id,
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
