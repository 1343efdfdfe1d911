"""A timeline group's rows as numpy columns, in memory or spilled to disk, and a lane's rows
streamed back in sort order (for `collect`).

A group (one kind of one rank, device, stream, pid, tid) is a list of stretches: the
columns of the rows it received between two spills, in arrival order. Names are integer ids
into the collector's `Names`; a missing correlation is `NO_CORR`.

Public surface: `Stretch`, `Group`, `Spill`, `Names`, `Lane`, `Extent`, `Row`, `NO_CORR`.
"""

from __future__ import annotations

import heapq
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import chain, pairwise

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

Ints = npt.NDArray[np.int64]
Row = tuple[int, int, str, int, int | None]  # start, end, name, event id, correlation
NO_CORR = -(2**63)  # a missing correlation (as in the spill file, where columns are int64)
_CORR_OR_NONE = {NO_CORR: None}.get  # map(_CORR_OR_NONE, c, c): the sentinel back to None
# Rows turned into Python tuples at once when a lane streams (bounds its transient lists).
_ROWS_STEP = 8192
# A group in more sorted runs than this is sorted whole instead of merged run by run
# (only an input in no particular order gets there; a heap of thousands of runs is slower).
_MAX_RUNS = 64


@dataclass(slots=True)
class Stretch:
    """Rows of one group as int64 columns."""

    starts: Ints
    durs: Ints
    names: Ints
    ids: Ints
    corrs: Ints

    def __len__(self) -> int:
        return len(self.starts)

    @property
    def ends(self) -> Ints:
        return self.starts + self.durs

    def take(self, rows: npt.NDArray[np.intp] | slice) -> Stretch:
        return Stretch(*(column[rows] for column in self.columns()))

    def columns(self) -> tuple[Ints, ...]:
        return self.starts, self.durs, self.names, self.ids, self.corrs

    @staticmethod
    def join(parts: Sequence[Stretch]) -> Stretch:
        if len(parts) == 1:
            return parts[0]
        columns = zip(*(p.columns() for p in parts), strict=True)
        return Stretch(*(np.concatenate(c) for c in columns))


class Names:
    """Every name seen, numbered from 0 in order of appearance."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self._ids: dict[str, int] = {}

    def encode(self, names: pa.Array) -> Ints:
        """The ids of a string column (new names are numbered): one dict look-up per
        distinct name of the column, not per row."""
        encoded = pc.dictionary_encode(names)
        ids = np.array(list(map(self._id, encoded.dictionary.to_pylist())), dtype=np.int64)
        indices: Ints = encoded.indices.to_numpy(zero_copy_only=False)
        return ids[indices]

    def _id(self, name: str) -> int:
        found = self._ids.get(name)
        if found is None:
            found = self._ids[name] = len(self.text)
            self.text.append(name)
        return found

    def ranks(self) -> Ints:
        """Each name id's place in the names' sorted (code point) order."""
        order = sorted(range(len(self.text)), key=self.text.__getitem__)
        ranks = np.empty(len(order), dtype=np.int64)
        ranks[order] = np.arange(len(order), dtype=np.int64)
        return ranks


class Spill:
    """An unlinked temporary file holding stretches of group columns, so that a trace of
    any length keeps at most `SPILL_ROWS` rows of them in memory while it is inserted."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile(prefix="perfdash-timeline-")  # noqa: SIM115
        self._end = 0

    def write(self, s: Stretch) -> tuple[int, int]:
        """Write the stretch; returns (offset, rows) for `read`."""
        data = b"".join(column.tobytes() for column in s.columns())
        os.pwrite(self._file.fileno(), data, self._end)
        where = (self._end, len(s))
        self._end += len(data)
        return where

    def read(self, offset: int, n: int) -> Stretch:
        """One stretch written by `write`."""
        data = os.pread(self._file.fileno(), 5 * 8 * n, offset)
        columns = np.frombuffer(data, dtype=np.int64).reshape(5, n)
        return Stretch(*columns)


class Group:
    """The rows of one (kind, rank, device, stream, pid, tid): stretches spilled to disk
    (`spilled`), then the ones received since (`pending`, joined on first read)."""

    __slots__ = ("held", "pending", "spilled")

    def __init__(self) -> None:
        self.pending: list[Stretch] = []
        self.held = 0
        self.spilled: list[tuple[int, int]] = []  # (offset in the spill file, rows)

    def add(self, s: Stretch) -> None:
        self.pending.append(s)
        self.held += len(s)

    def spill_to(self, spill: Spill) -> None:
        if self.held:
            self.spilled.append(spill.write(Stretch.join(self.pending)))
            self.pending, self.held = [], 0

    def parts(self, spill: Spill | None) -> list[tuple[int, Callable[[], Stretch]]]:
        """The group's stretches in arrival order, as (rows, loader): the spilled ones are
        read from disk only when loaded, the last is the rows held in memory."""
        out: list[tuple[int, Callable[[], Stretch]]] = []
        if spill is not None:
            out.extend((n, partial(spill.read, offset, n)) for offset, n in self.spilled)
        if self.held:
            self.pending = [Stretch.join(self.pending)]
            held = self.pending[0]
            out.append((self.held, lambda: held))
        return out

    def stretches(self, spill: Spill | None) -> Iterator[Stretch]:
        """The stretches loaded one at a time (one in memory at once)."""
        return (load() for _, load in self.parts(spill))


@dataclass(slots=True)
class Order:
    """What sorting a lane's rows needs: the names' text and their sorted ranks."""

    text: npt.NDArray[np.object_]
    ranks: Ints

    def key(self, s: Stretch) -> tuple[Ints, Ints, Ints, Ints]:
        """The sort key columns, most significant first: start, end, name, id."""
        return s.starts, s.ends, self.ranks[s.names], s.ids

    def rows(self, s: Stretch, a: int, b: int) -> Iterator[Row]:
        """Rows a..b-1 of a stretch as tuples, a few thousand turned into Python at a time."""
        return chain.from_iterable(
            self._rows(s, lo, min(lo + _ROWS_STEP, b)) for lo in range(a, b, _ROWS_STEP)
        )

    def _rows(self, s: Stretch, a: int, b: int) -> Iterator[Row]:
        starts = s.starts[a:b]
        corrs = s.corrs[a:b].tolist()
        return zip(
            starts.tolist(), (starts + s.durs[a:b]).tolist(), self.text[s.names[a:b]].tolist(),
            s.ids[a:b].tolist(), map(_CORR_OR_NONE, corrs, corrs), strict=True,
        )  # fmt: skip


def _descents(key: Sequence[Ints]) -> Ints:
    """Positions i >= 1 where row i sorts before row i - 1 (lexicographic on `key`)."""
    less = np.zeros(max(len(key[0]) - 1, 0), dtype=bool)
    equal = np.ones_like(less)
    for column in key:
        after, before = column[1:], column[:-1]
        less |= equal & (after < before)
        equal &= after == before
    return np.flatnonzero(less) + 1


def _run_bounds(g: Group, spill: Spill | None, order: Order) -> list[int] | None:
    """[0, b1, ..., n]: where the group's rows (all its stretches) start a new sorted run,
    or None past `_MAX_RUNS` runs."""
    bounds, base = [0], 0
    before: tuple[int, ...] | None = None
    for s in g.stretches(spill):
        key = order.key(s)
        first = tuple(int(c[0]) for c in key)
        if before is not None and first < before:
            bounds.append(base)
        bounds.extend((base + _descents(key)).tolist())
        if len(bounds) > _MAX_RUNS:
            return None
        base += len(s)
        before = tuple(int(c[-1]) for c in key)
    bounds.append(base)
    return bounds


def _range_rows(
    parts: list[tuple[int, Callable[[], Stretch]]], a: int, b: int, order: Order
) -> Iterator[Row]:
    """Rows a..b-1 of a group, loading only the stretches they lie in, one at a time."""
    base = 0
    for n, load in parts:
        lo, hi = max(a, base), min(b, base + n)
        if lo < hi:
            yield from order.rows(load(), lo - base, hi - base)
        base += n


def _sorted_rows(g: Group, spill: Spill | None, order: Order) -> Iterator[Row]:
    """The group's rows sorted by (start, end, name, id), made one at a time: its sorted runs
    merged lazily, so no lane is ever held as a list of tuples (only a group in no order
    at all is sorted whole, as columns)."""
    bounds = _run_bounds(g, spill, order)
    if bounds is None:
        whole = Stretch.join(list(g.stretches(spill)))
        rows = np.lexsort(order.key(whole)[::-1])
        return order.rows(whole.take(rows), 0, len(whole))
    parts = g.parts(spill)
    runs = [_range_rows(parts, a, b, order) for a, b in pairwise(bounds)]
    return runs[0] if len(runs) == 1 else heapq.merge(*runs)


class Extent:
    """A lane's row count, first start and last end, accounted stretch by stretch."""

    __slots__ = ("count", "first_start", "last")

    def __init__(self) -> None:
        self.count = self.first_start = 0
        self.last: tuple[int, int] | None = None  # the last row's (start, end) in sort order

    def add(self, s: Stretch) -> None:
        first = int(s.starts.min())
        self.first_start = min(self.first_start, first) if self.count else first
        self.count += len(s)
        latest = int(s.starts.max())
        top = (latest, int(s.ends[s.starts == latest].max()))
        self.last = top if self.last is None else max(self.last, top)


class Lane:
    """One lane's rows, kept as its groups' columns (in memory or spilled) and streamed in
    sorted order on demand: memory per lane is one stretch of columns, however long."""

    def __init__(
        self, groups: list[Group], spill: Spill | None, extent: Extent, order: Order
    ) -> None:
        self._groups, self._spill, self._order = groups, spill, order
        self.count, self.first_start = extent.count, extent.first_start
        self.last_end = extent.last[1] if extent.last is not None else 0

    def rows(self) -> Iterator[Row]:
        """The rows sorted by (start, end, name, id), a fresh iterator per call."""
        streams = [_sorted_rows(g, self._spill, self._order) for g in self._groups]
        return streams[0] if len(streams) == 1 else heapq.merge(*streams)
