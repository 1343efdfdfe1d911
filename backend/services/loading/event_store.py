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
from contextlib import contextmanager
from itertools import chain, count, islice, repeat
from typing import Any

import orjson
from sqlalchemy.engine import Connection

from backend.core.bulk_insert import BATCH_SIZE, bulk_insert
from ingest import Event, EventKind
from ingest.events import EventBlock

COLUMNS = (
    "id", "trace_id", "kind", "name", "start_ns", "dur_ns", "rank", "device", "stream", "pid",
    "tid", "correlation", "args",
)  # fmt: skip
Row = tuple[Any, ...]


def insert_events(
    conn: Connection,
    trace_id: str,
    events: Iterable[Event | EventBlock],
    *,
    on_batch: Callable[[int], None] | None = None,
    sink: Callable[[list[Row]], None] | None = None,
) -> int:
    """Insert every event of `events` (events and parsers' blocks) for `trace_id`; return how
    many were inserted.

    `on_batch(total_so_far)` is called after each batch (progress reporting); `sink(rows)`
    receives each batch of written rows (`COLUMNS` order, ids included).
    """
    with _new_ids(conn) as ids:
        rows = _rows(trace_id, events, ids)
        return bulk_insert(conn, "events", COLUMNS, rows, on_batch=on_batch, sink=sink)


@contextmanager
def _new_ids(conn: Connection) -> Iterator[Iterator[int]]:
    """Unused event ids, in increasing order.

    On PostgreSQL they come from a second, autocommit connection: the ingest's own is busy
    with one COPY while rows are made, and `nextval` is not transactional anyway.
    """
    if conn.dialect.name != "postgresql":
        largest = conn.exec_driver_sql("SELECT coalesce(max(id), 0) FROM events").scalar()
        yield count(int(largest or 0) + 1)
        return
    with conn.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as other:
        yield chain.from_iterable(_sequence_blocks(other))


def _sequence_blocks(conn: Connection) -> Iterator[list[int]]:
    """Blocks of `BATCH_SIZE` values of the events' id sequence (one query per block, read
    through the driver: SQLAlchemy's row objects cost more than the query)."""
    sql = (
        "SELECT nextval(pg_get_serial_sequence('events', 'id')) "
        f"FROM generate_series(1, {BATCH_SIZE})"
    )
    cursor: Any = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
    try:
        while True:
            yield [i for (i,) in cursor.execute(sql).fetchall()]
    finally:
        cursor.close()


_KIND_TEXT = {kind: kind.value for kind in EventKind}  # Enum.value is a slow descriptor


def _rows(trace_id: str, items: Iterable[Event | EventBlock], ids: Iterator[int]) -> Iterator[Row]:
    dumps, kind_text = orjson.dumps, _KIND_TEXT
    for e in items:
        if isinstance(e, EventBlock):
            yield from _block_rows(trace_id, e, ids)
            continue
        args = e.args
        yield (
            next(ids),
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


def _block_rows(trace_id: str, block: EventBlock, ids: Iterator[int]) -> Iterator[Row]:
    """A block's rows, zipped from its columns (args shared by many rows, as a parser's
    read-only constant dicts are, are serialised once)."""
    c, n = block.column, len(block)
    return zip(
        islice(ids, n), repeat(trace_id, n), repeat(_KIND_TEXT[block.kind], n), block.name,
        block.start_ns, block.dur_ns, c(block.rank), c(block.device), c(block.stream),
        c(block.pid), c(block.tid), c(block.correlation), _args_json(block), strict=True,
    )  # fmt: skip


def _args_json(block: EventBlock) -> Iterator[str | None]:
    if block.args is None:
        return repeat(None, len(block))
    by_id = dict(zip(map(id, block.args), block.args, strict=True))  # the block keeps them alive
    text = {key: orjson.dumps(args).decode() if args else None for key, args in by_id.items()}
    return map(text.__getitem__, map(id, block.args))
