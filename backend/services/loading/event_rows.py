"""Normalised events as row tuples, the one shape both consumers of an ingest read.

The dataset writer stores them (`backend.services.datasets`) and the timeline collector
indexes them, from the same batches. Event ids number a trace's events from 1 in the order
the parser produced them, so what is computed while the rows stream past (the timeline
index) knows each event's id without reading the dataset back.

Public surface: `event_batches`, `COLUMNS`, `Row`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import count, islice, repeat
from typing import Any

import orjson

from ingest import Event, EventKind
from ingest.events import EventBlock

COLUMNS = (
    "id", "trace_id", "kind", "name", "start_ns", "dur_ns", "rank", "device", "stream", "pid",
    "tid", "correlation", "args",
)  # fmt: skip
Row = tuple[Any, ...]
BATCH_SIZE = 20_000


def event_batches(
    trace_id: str, events: Iterable[Event | EventBlock], *, size: int = BATCH_SIZE
) -> Iterator[list[Row]]:
    """The rows of `events` (events and parsers' blocks), `size` at a time, ids from 1."""
    rows = _rows(trace_id, events, count(1))
    while batch := list(islice(rows, size)):
        yield batch


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
