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
from itertools import groupby, islice
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
# name them (`_events_batch` lists them in this order), and their Arrow types.
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
    """Batches of any length, in order, ids numbered on: one per block, one per `size`
    events of a run of events between blocks (runs found by type, not a test per event)."""
    next_id = 1
    for kind, run in groupby(items, type):
        if issubclass(kind, EventBlock):
            blocks: Iterator[EventBlock] = run  # type: ignore[assignment]
            for block in blocks:
                if len(block):
                    yield _block_batch(block, next_id)
                    next_id += len(block)
            continue
        while events := list(islice(run, size)):
            yield _events_batch(events, next_id)  # type: ignore[arg-type]
            next_id += len(events)


def _events_batch(events: list[Event], first_id: int) -> pa.RecordBatch:
    """`Event` objects transposed once into columns: one comprehension per column (a slot
    read in a comprehension costs half an `attrgetter` call or a tuple per event)."""
    kind = _KIND_TEXT
    columns = (
        [e.name for e in events], [e.start_ns for e in events], [e.dur_ns for e in events],
        [e.rank for e in events], [e.device for e in events], [e.stream for e in events],
        [e.pid for e in events], [e.tid for e in events], [e.correlation for e in events],
    )  # fmt: skip
    arrays = [
        _ids(first_id, len(events)),
        pa.array([kind[e.kind] for e in events], type=pa.string()),
        *(pa.array(c, type=t) for c, t in zip(columns, _TYPES, strict=True)),
        pa.array(_args_json([e.args for e in events]), type=pa.string()),
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
        pa.nulls(n, pa.string()) if block.args is None else _shared_args(block.args),
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


def _shared_args(args: Sequence[dict[str, Any] | None]) -> pa.Array:
    """A block's args column: a parser's read-only constant dicts are shared by many rows,
    so each distinct object is serialised once (the block keeps them alive, so their ids
    are stable meanwhile)."""
    by_id = dict(zip(map(id, args), args, strict=True))
    text = dict(zip(by_id, _args_json(by_id.values()), strict=True))
    return pa.array(list(map(text.__getitem__, map(id, args))), type=pa.string())
