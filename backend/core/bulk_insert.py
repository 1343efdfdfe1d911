"""Bulk row loading through the database driver, on the caller's connection and transaction.

PostgreSQL gets one `COPY ... FROM STDIN` for the whole stream (the server loads rows while
the caller makes the next ones: rows must therefore be made without queries on this
connection); SQLite gets the driver's `executemany` on plain tuples, a batch at a time.
SQLAlchemy's Core insert with a dict per row was 3-4x slower for events and 3x for the
timeline index (docs/PERFORMANCE.md). No producer thread: tried, and it made SQLite 3x
slower, because every GIL-free `sqlite3_step` handed the GIL to the parser for a whole
switch interval (a GIL convoy).

Public surface: `bulk_insert`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from itertools import islice
from typing import Any

from sqlalchemy.engine import Connection

BATCH_SIZE = 20_000


def bulk_insert(
    conn: Connection,
    table: str,
    columns: Sequence[str],
    rows: Iterable[tuple[Any, ...]],
    *,
    on_batch: Callable[[int], None] | None = None,
    sink: Callable[[list[tuple[Any, ...]]], None] | None = None,
) -> int:
    """Insert `rows` (tuples in `columns` order) into `table`; return how many.

    `on_batch(total_so_far)` runs after each batch of `BATCH_SIZE` (progress reporting);
    `sink(batch)` receives each batch once it is handed to the database (what else is
    computed from the rows).
    `table` and `columns` come from code, never from input.
    """
    names = ", ".join(columns)
    it = iter(rows)
    cursor: Any = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
    postgres = conn.dialect.name == "postgresql"
    sql = (
        f"COPY {table} ({names}) FROM STDIN"
        if postgres
        else f"INSERT INTO {table} ({names}) VALUES ({', '.join('?' * len(columns))})"
    )
    total = 0
    try:
        if postgres:  # one COPY for the whole stream: the server loads while rows are made
            with cursor.copy(sql) as copy:
                while batch := list(islice(it, BATCH_SIZE)):
                    for row in batch:
                        copy.write_row(row)
                    total = _done(batch, total, sink, on_batch)
        else:
            while batch := list(islice(it, BATCH_SIZE)):
                cursor.executemany(sql, batch)
                total = _done(batch, total, sink, on_batch)
    finally:
        cursor.close()
    return total


def _done(
    batch: list[tuple[Any, ...]],
    total: int,
    sink: Callable[[list[tuple[Any, ...]]], None] | None,
    on_batch: Callable[[int], None] | None,
) -> int:
    if sink:
        sink(batch)
    total += len(batch)
    if on_batch:
        on_batch(total)
    return total
