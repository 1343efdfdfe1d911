"""Normalised events as Arrow record batches, the one shape both consumers of an ingest read.

The dataset writer stores them (`backend.services.datasets`) and the timeline collector
indexes them, from the same batches, in the dataset's `EVENT_SCHEMA`. Event ids number a
trace's events from 1 in the order the parser produced them, so what is computed while the
batches stream past (the timeline index) knows each event's id without reading the
dataset back. A parser's `EventBlock` goes into Arrow column by column; `Event` objects
are transposed once per batch: no per-event tuple is built.

Public surface: `event_batches`, `BATCH_SIZE`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import groupby, islice, repeat
from typing import Any

import numpy as np
import orjson
import pyarrow as pa

from backend.services.datasets import EVENT_SCHEMA
from ingest import Event, EventKind
from ingest.events import EventBlock

BATCH_SIZE = 20_000
_KIND_TEXT = {kind: kind.value for kind in EventKind}  # Enum.value is a slow descriptor
# The columns between kind and args, in `EVENT_SCHEMA` order, as `Event` and `EventBlock`
# name them (`_Columns.add_events` lists them in this order), and their Arrow types.
_FIELDS = tuple(EVENT_SCHEMA.names[2:-1])
_TYPES = tuple(EVENT_SCHEMA.field(name).type for name in _FIELDS)


def event_batches(
    events: Iterable[Event | EventBlock], *, size: int = BATCH_SIZE
) -> Iterator[pa.RecordBatch]:
    """The events (and parsers' blocks) as batches of `size` rows (the last one shorter),
    ids from 1 in order; `args` is the JSON text of an event's args, null when empty."""
    pending: list[pa.RecordBatch] = []
    held = 0
    for piece in _pieces(events, size):
        if not pending and piece.num_rows == size:
            yield piece  # the common case: a run of events cut at `size`
            continue
        pending.append(piece)
        held += piece.num_rows
        if held >= size:
            whole = pa.concat_batches(pending)
            cut = held - held % size
            for start in range(0, cut, size):
                yield whole.slice(start, size)
            pending = [whole.slice(cut)] if cut < held else []
            held -= cut
    if held:
        yield pa.concat_batches(pending)


def _pieces(items: Iterable[Event | EventBlock], size: int) -> Iterator[pa.RecordBatch]:
    """Batches of any length, in order, ids numbered on. Events and small blocks gather in
    Python column lists, converted to Arrow once about `size` rows are held (a parser may
    yield thousands of few-row blocks); a block of `size` rows or more goes to Arrow whole.
    Runs of events are found by type, not a test per event."""
    held, next_id = _Columns(), 1
    for kind, run in groupby(items, type):
        if issubclass(kind, EventBlock):
            blocks: Iterator[EventBlock] = run  # type: ignore[assignment]
            for block in blocks:
                if len(block) >= size:
                    if held.rows:
                        yield held.batch(next_id)
                        next_id += held.clear()
                    yield _block_batch(block, next_id)
                    next_id += len(block)
                    continue
                held.add_block(block)
                if held.rows >= size:
                    yield held.batch(next_id)
                    next_id += held.clear()
            continue
        while events := list(islice(run, size - held.rows)):
            held.add_events(events)  # type: ignore[arg-type]
            if held.rows >= size:
                yield held.batch(next_id)
                next_id += held.clear()
    if held.rows:
        yield held.batch(next_id)


class _Columns:
    """Rows gathered as Python column lists (`EVENT_SCHEMA` order from name on, args as
    JSON text) until they are converted to Arrow in one call per column."""

    def __init__(self) -> None:
        self.kinds: list[str] = []
        self.columns: tuple[list[Any], ...] = tuple([] for _ in _FIELDS)
        self.args: list[str | None] = []
        self.rows = 0

    def clear(self) -> int:
        """Empty the lists; return how many rows they held."""
        rows = self.rows
        self.kinds, self.columns, self.args = [], tuple([] for _ in _FIELDS), []
        self.rows = 0
        return rows

    def add_events(self, events: list[Event]) -> None:
        """`Event` objects transposed: one comprehension per column (a slot read in a
        comprehension costs half an `attrgetter` call or a tuple per event)."""
        kind = _KIND_TEXT
        self.kinds += [kind[e.kind] for e in events]
        name, start, dur, rank, device, stream, pid, tid, corr = self.columns
        name += [e.name for e in events]
        start += [e.start_ns for e in events]
        dur += [e.dur_ns for e in events]
        rank += [e.rank for e in events]
        device += [e.device for e in events]
        stream += [e.stream for e in events]
        pid += [e.pid for e in events]
        tid += [e.tid for e in events]
        corr += [e.correlation for e in events]
        self.args += _args_json([e.args for e in events])
        self.rows += len(events)

    def add_block(self, block: EventBlock) -> None:
        n = len(block)
        self.kinds += repeat(_KIND_TEXT[block.kind], n)
        for column, name in zip(self.columns, _FIELDS, strict=True):
            values = getattr(block, name)
            column += repeat(None, n) if values is None else values
        self.args += repeat(None, n) if block.args is None else _shared_args(block.args)
        self.rows += n

    def batch(self, first_id: int) -> pa.RecordBatch:
        arrays = [
            _ids(first_id, self.rows),
            pa.array(self.kinds, type=pa.string()),
            *(pa.array(c, type=t) for c, t in zip(self.columns, _TYPES, strict=True)),
            pa.array(self.args, type=pa.string()),
        ]
        return pa.RecordBatch.from_arrays(arrays, schema=EVENT_SCHEMA)


def _block_batch(block: EventBlock, first_id: int) -> pa.RecordBatch:
    """A block's columns, each converted by Arrow as a whole; absent ones are nulls."""
    n = len(block)
    kind = pa.repeat(pa.scalar(_KIND_TEXT[block.kind], type=pa.string()), n)
    columns: list[Sequence[Any] | None] = [getattr(block, name) for name in _FIELDS]
    arrays = [
        _ids(first_id, n),
        kind,
        *(_column(c, t, n) for c, t in zip(columns, _TYPES, strict=True)),
        pa.nulls(n, pa.string())
        if block.args is None
        else pa.array(_shared_args(block.args), type=pa.string()),
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=EVENT_SCHEMA)


def _ids(first: int, n: int) -> pa.Array:
    return pa.array(np.arange(first, first + n, dtype=np.int64))


def _column(values: Sequence[Any] | None, type_: pa.DataType, n: int) -> pa.Array:
    return pa.nulls(n, type_) if values is None else pa.array(values, type=type_)


def _args_json(args: Iterable[dict[str, Any] | None]) -> list[str | None]:
    """JSON text of each args dict, None when empty. As text, not orjson's bytes: Arrow
    validates bytes given for a string column, and holding many bytes objects alive cost
    3x the serialisation itself."""
    dumps = orjson.dumps
    return [dumps(a).decode() if a else None for a in args]


def _shared_args(args: Sequence[dict[str, Any] | None]) -> list[str | None]:
    """A block's args column: a parser's read-only constant dicts are shared by many rows,
    so each distinct object is serialised once (the block keeps them alive, so their ids
    are stable meanwhile)."""
    by_id = dict(zip(map(id, args), args, strict=True))
    text = dict(zip(by_id, _args_json(by_id.values()), strict=True))
    return list(map(text.__getitem__, map(id, args)))
