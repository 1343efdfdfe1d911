"""Bulk loading of normalised events: one row tuple per event, written through
`backend.core.bulk_insert` (COPY on PostgreSQL, raw executemany on SQLite) on the caller's
connection, so a failed ingest leaves no rows.

Public surface: `insert_events`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import orjson
from sqlalchemy.engine import Connection

from backend.core.bulk_insert import bulk_insert
from ingest import Event, EventKind

COLUMNS = (
    "trace_id", "kind", "name", "start_ns", "dur_ns", "rank", "device", "stream", "pid",
    "tid", "correlation", "args",
)  # fmt: skip
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
    return bulk_insert(conn, "events", COLUMNS, _rows(trace_id, events), on_batch=on_batch)


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
