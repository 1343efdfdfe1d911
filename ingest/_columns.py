"""Column helpers for the aggregates that read `EventBlock`s: C-level passes (builtins,
`map`, `itertools`), never a Python statement per row.

Every aggregate keeps integer columns (`array('q')`) where a missing value is `NONE`;
`filled` is that one rule for a block's column. `rows_with` finds the rare rows whose args
carry a key, so only those are looked at one by one. `one` is an event as a block of one,
so a track whose block path is its only definition can still take single events.

Public surface (private to `ingest`): `NONE`, `filled`, `rows_with`, `arg_values`,
`as_numpy`, `changes`, `group_starts`, `group_sums`, `sums_by`, `one`, `to_block`,
`regroup`.
"""

from __future__ import annotations

import operator
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import compress, repeat
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from ingest.events import Event, EventBlock, EventKind

NONE = -1  # a missing device, stream, rank, correlation or thread in an integer column
Column = Sequence[int] | NDArray[np.int64]  # an integer column: `array('q')`, list or numpy
# v -> NONE if v is None else v, as `_NONE_FOR_NONE(v, v)` (ints are hashable)
_NONE_FOR_NONE = cast("Callable[[Any, Any], int]", {None: NONE}.get)
_GET = cast("Callable[[Any, str], Any]", dict.get)


def filled(values: Sequence[int | None] | None, n: int) -> Sequence[int]:
    """A block's integer column with None as `NONE` (the column itself when it has none).

    >>> filled([3, None, 5], 3), filled(None, 2), filled([1, 2], 2)
    ([3, -1, 5], [-1, -1], [1, 2])
    """
    if values is None:
        return [NONE] * n
    if None not in values:
        return values  # type: ignore[return-value]
    return list(map(_NONE_FOR_NONE, values, values))


def rows_with(args: Sequence[dict[str, Any] | None] | None, key: str) -> list[int]:
    """Indices of the rows whose args hold `key`, ascending.

    >>> rows_with([None, {"a": 1}, {}, {"b": 2, "a": 3}], "a"), rows_with(None, "a")
    ([1, 3], [])
    """
    if args is None:
        return []
    present = list(compress(range(len(args)), args))  # rows with a non-empty args dict
    if not present:
        return []
    dicts: Iterator[Any] = compress(args, args)
    return list(compress(present, map(operator.contains, dicts, repeat(key))))


def arg_values(args: Sequence[dict[str, Any] | None] | None, key: str, n: int) -> list[Any]:
    """Per row, `args[key]`, or None where the row has no args or no such key.

    >>> arg_values([None, {"a": 1}, {}, {"a": 3}], "a", 4), arg_values(None, "a", 2)
    ([None, 1, None, 3], [None, None])
    """
    if args is None:
        return [None] * n
    if all(args):  # every row has a non-empty dict
        return list(map(_GET, args, repeat(key)))
    out: list[Any] = [None] * n
    rows = list(compress(range(n), args))
    for i, value in zip(rows, map(_GET, compress(args, args), repeat(key)), strict=True):
        out[i] = value
    return out


def one(event: Event) -> EventBlock:
    """An event as a block of one row."""
    e = event
    return EventBlock(
        e.kind, [e.name], [e.start_ns], [e.dur_ns], [e.device], [e.stream], [e.pid], [e.tid],
        [e.correlation], [e.args], [e.rank],
    )  # fmt: skip


def as_numpy(column: Column) -> NDArray[np.int64]:
    """An integer column as a numpy copy (a copy, so the `array('q')` can still grow)."""
    if isinstance(column, array) and len(column):
        return np.frombuffer(column, dtype=np.int64).copy()
    return np.asarray(column, dtype=np.int64)


_OPTIONAL = ("device", "stream", "pid", "tid", "correlation", "args", "rank")


def to_block(rows: Sequence[Event]) -> EventBlock:
    """Events of one kind as an `EventBlock` (an all-None column becomes None)."""
    columns: dict[str, Any] = {}
    for field in _OPTIONAL:
        values = [getattr(e, field) for e in rows]
        columns[field] = None if values.count(None) == len(values) else values
    return EventBlock(
        rows[0].kind, [e.name for e in rows], [e.start_ns for e in rows],
        [e.dur_ns for e in rows], **columns,
    )  # fmt: skip


def regroup(events: Iterable[Event], size: int) -> list[Event | EventBlock]:
    """Events as per-kind blocks of up to `size` rows, each kind's rows in stream order: the
    shape of a columnar parser's output (tests and benchmarks feed it to the aggregates)."""
    out: list[Event | EventBlock] = []
    pending: dict[EventKind, list[Event]] = {}
    for event in events:
        rows = pending.setdefault(event.kind, [])
        rows.append(event)
        if len(rows) == size:
            out.append(to_block(rows))
            rows.clear()
    out.extend(to_block(rows) for rows in pending.values() if rows)
    return out


def changes(*columns: NDArray[np.int64]) -> NDArray[np.bool_]:
    """True where a row of sorted key columns differs from the row before (and at row 0)."""
    change = np.zeros(len(columns[0]), dtype=np.bool_)
    change[:1] = True
    for column in columns:
        change[1:] |= column[1:] != column[:-1]
    return change


def group_starts(*columns: NDArray[np.int64]) -> NDArray[np.intp]:
    """Where each group of rows sorted by key columns begins."""
    return np.flatnonzero(changes(*columns))


def group_sums(ordered: NDArray[np.int64], starts: NDArray[np.intp]) -> NDArray[Any]:
    """Exact sums of the groups (in Python integers when int64 could overflow)."""
    biggest = max(abs(int(ordered.min())), abs(int(ordered.max())))
    if biggest * len(ordered) >= 1 << 63:
        return np.add.reduceat(ordered.astype(object), starts)
    return np.add.reduceat(ordered, starts)


def sums_by(keys: Column, values: Column, n: int) -> list[int]:
    """Exact sums of `values` per key 0..n-1 (0 for a key without values).

    >>> sums_by([2, 0, 2], [5, 1, 7], 4)
    [1, 0, 12, 0]
    """
    out = [0] * n
    if not len(keys):
        return out
    key, value = as_numpy(keys), as_numpy(values)
    order = np.argsort(key, kind="stable")
    starts = group_starts(key[order])
    for k, total in zip(
        key[order][starts].tolist(), group_sums(value[order], starts).tolist(), strict=True
    ):
        out[k] = total
    return out
