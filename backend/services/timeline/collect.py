"""What the timeline index needs from a trace's events, collected while they are inserted.

The ingest hands every batch of event rows it has just written (`event_rows.COLUMNS`
order, ids included) to `TimelineCollector.add`, so the index never reads the events back.
Per batch, rows are grouped by (kind, rank, device, stream, pid, tid) and kept as columns;
everything per event that the index needs (lane rows, name counts, launches, runtime and
sync intervals, long events) is then computed per group from those columns at `finish`,
mostly inside C-level builtins (`map`, `zip`, `sorted`, `dict`), not a Python loop per row.

The result does not depend on the order rows arrive in: a lane's "first" kernel is its
earliest (start, id), and when two runtime calls share a (rank, correlation), the launch
is the latest (start, id) one, which is what the former read-back in
(trace_id, kind, start_ns) index order gave on SQLite.

Memory stays bounded however long the trace: once `SPILL_ROWS` rows are held, every
group's columns move to an unlinked temporary file (stretches of 5 integer columns, names
as ids), and `finish` and the lanes read them back one stretch at a time. Lanes are
streamed in sorted order (their sorted runs merged lazily), never held as lists of rows.

Public surface: `TimelineCollector`, `Collected`, `Lane`, `Row`, `Thread`, `SPILL_ROWS`.
"""

from __future__ import annotations

import heapq
import os
import tempfile
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import chain, compress, groupby, islice, pairwise, repeat
from operator import add, itemgetter, le, lt
from typing import Any

from backend.services.timeline import lanes as lanes_mod
from backend.services.timeline.gaps import Launch
from backend.services.timeline.lanes import KIND_FAMILY, LaneKey
from backend.services.timeline.pyramid import LONG_NS
from ingest.classify import is_communication_name

Row = tuple[int, int, str, int, int | None]  # start, end, name, event id, correlation
Thread = tuple[int | None, int | None, int | None]  # rank, pid, tid
LaunchKey = tuple[int | None, int]  # rank, correlation
# Positions in an event row (`loading.event_rows.COLUMNS`).
_ID, _KIND, _NAME, _START, _DUR, _RANK, _DEVICE, _STREAM, _PID, _TID, _CORR = (
    0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
)  # fmt: skip
_GROUP_KEY = itemgetter(_KIND, _RANK, _DEVICE, _STREAM, _PID, _TID)
_COLUMNS = tuple(itemgetter(i) for i in (_START, _DUR, _NAME, _ID, _CORR))
GroupKey = tuple[str, int | None, int | None, int | None, int | None, int | None]
# Rows of columns held in memory before they move to a temporary file: 40 B each, so at
# most about 20 MB (a 186k-event trace never spills; a 1.86M-event one does, three times).
SPILL_ROWS = 500_000


class _Group:
    """The rows of one (kind, rank, device, stream, pid, tid), as columns (integers in
    `array('q')`: 8 bytes a value, where a list of ints costs 40). Rows spilled to disk
    are listed in `spilled`; the columns hold the rows added since."""

    __slots__ = ("corrs", "durs", "ids", "names", "spilled", "starts")

    def __init__(self) -> None:
        self.starts = array("q")
        self.durs = array("q")
        self.names: list[str] = []
        self.ids = array("q")
        self.corrs: list[int | None] = []
        self.spilled: list[tuple[int, int]] = []  # (offset in the spill file, rows)

    def extend(self, rows: list[tuple[Any, ...]]) -> None:
        columns: tuple[array[int] | list[Any], ...] = (
            self.starts, self.durs, self.names, self.ids, self.corrs,
        )  # fmt: skip
        for column, get in zip(columns, _COLUMNS, strict=True):
            column.extend(map(get, rows))

    def ends(self) -> Iterator[int]:
        return map(add, self.starts, self.durs)

    def __len__(self) -> int:
        return len(self.starts)

    def parts(self, spill: _Spill | None) -> list[tuple[int, Callable[[], _Group]]]:
        """The group's stretches in arrival order, as (rows, loader): the spilled ones are
        read from disk only when loaded, the last is these columns."""
        out: list[tuple[int, Callable[[], _Group]]] = []
        if spill is not None:
            out.extend((n, partial(spill.read, offset, n)) for offset, n in self.spilled)
        if self.starts:  # empty only once everything was spilled (a group never starts empty)
            out.append((len(self.starts), lambda: self))
        return out

    def chunks(self, spill: _Spill | None) -> Iterator[_Group]:
        """The stretches loaded one at a time (one in memory at once)."""
        return (load() for _, load in self.parts(spill))


_NO_CORR = -(2**63)  # a missing correlation, in a spilled integer column
_CORR_OR_NONE = {_NO_CORR: None}.get  # map(_CORR_OR_NONE, c, c): the sentinel back to None


class _Spill:
    """An unlinked temporary file holding stretches of group columns, so that a trace of
    any length keeps at most `SPILL_ROWS` rows of them in memory while it is inserted."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile(prefix="perfdash-timeline-")  # noqa: SIM115
        self._end = 0
        self._names: list[str] = []
        self._name_ids: dict[str, int] = {}

    def write(self, g: _Group) -> None:
        """Move the group's columns to the file (they are emptied)."""
        n = len(g)
        names = array("q", map(self._name_id, g.names))
        corrs = array("q", [_NO_CORR if c is None else c for c in g.corrs])
        data = b"".join(column.tobytes() for column in (g.starts, g.durs, g.ids, names, corrs))
        os.pwrite(self._file.fileno(), data, self._end)
        g.spilled.append((self._end, n))
        self._end += len(data)
        for ints in (g.starts, g.durs, g.ids):
            del ints[:]
        g.names, g.corrs = [], []

    def read(self, offset: int, n: int) -> _Group:
        """One stretch written by `write`, as a group of its own."""
        data = os.pread(self._file.fileno(), 5 * 8 * n, offset)
        columns = [array("q", data[i * 8 * n : (i + 1) * 8 * n]) for i in range(5)]
        g = _Group()
        g.starts, g.durs, g.ids = columns[0], columns[1], columns[2]
        g.names = list(map(self._names.__getitem__, columns[3]))
        g.corrs = list(map(_CORR_OR_NONE, columns[4], columns[4]))
        return g

    def _name_id(self, name: str) -> int:
        found = self._name_ids.get(name)
        if found is None:
            found = self._name_ids[name] = len(self._names)
            self._names.append(name)
        return found


def _increasing(values: Sequence[int]) -> bool:
    return all(map(lt, values, islice(values, 1, None)))


# A group in more sorted runs than this is sorted whole instead of merged run by run
# (only an input in no particular order gets there; a heap of thousands of runs is slower).
_MAX_RUNS = 64
_SortKey = tuple[int, int, str, int]  # start, end, name, id: a row's sort order


def _breaks(g: _Group, before: _SortKey | None) -> list[int] | None:
    """Where the stretch's rows, in arrival order, drop in (start, end, name, id) order,
    counting its first row against `before` (the previous stretch's last row); None past
    `_MAX_RUNS` drops."""
    starts, durs, names, ids = g.starts, g.durs, g.names, g.ids
    out = [0] if before is not None and _key(g, 0) < before else []
    if _increasing(starts):
        return out  # the common case: a Kineto or nsys lane arrives in start order
    for i in compress(range(1, len(g)), map(le, islice(starts, 1, None), starts)):
        s, p = starts[i], starts[i - 1]
        if s < p or (s + durs[i], names[i], ids[i]) < (p + durs[i - 1], names[i - 1], ids[i - 1]):
            out.append(i)
            if len(out) > _MAX_RUNS:
                return None
    return out


def _key(g: _Group, i: int) -> _SortKey:
    return g.starts[i], g.starts[i] + g.durs[i], g.names[i], g.ids[i]


def _run_bounds(g: _Group, spill: _Spill | None) -> list[int] | None:
    """[0, b1, ..., n]: where the group's rows (all its stretches) start a new sorted run,
    or None past `_MAX_RUNS` runs."""
    bounds, base = [0], 0
    before: _SortKey | None = None
    for chunk in g.chunks(spill):
        found = _breaks(chunk, before)
        if found is None or len(bounds) + len(found) > _MAX_RUNS:
            return None
        bounds.extend(base + i for i in found if base + i > 0)
        base += len(chunk)
        before = _key(chunk, len(chunk) - 1)
    bounds.append(base)
    return bounds


def _chunk_rows(g: _Group, a: int, b: int) -> Iterator[Row]:
    """Rows a..b-1 of one stretch (the integer columns are sliced as views, not copied)."""
    starts, durs, ids = (memoryview(column)[a:b] for column in (g.starts, g.durs, g.ids))
    return zip(starts, map(add, starts, durs), g.names[a:b], ids, g.corrs[a:b], strict=True)


def _range_rows(parts: list[tuple[int, Callable[[], _Group]]], a: int, b: int) -> Iterator[Row]:
    """Rows a..b-1 of a group, loading only the stretches they lie in, one at a time."""
    base = 0
    for n, load in parts:
        lo, hi = max(a, base), min(b, base + n)
        if lo < hi:
            yield from _chunk_rows(load(), lo - base, hi - base)
        base += n


def _sorted_rows(g: _Group, spill: _Spill | None) -> Iterator[Row]:
    """The group's rows sorted by (start, end, name, id), made one at a time: its sorted runs
    merged lazily, so no lane is ever held as a list of tuples (only a group in no order
    at all is sorted as a list)."""
    bounds = _run_bounds(g, spill)
    parts = g.parts(spill)
    if bounds is None:
        rows = (_chunk_rows(chunk, 0, len(chunk)) for chunk in g.chunks(spill))
        return iter(sorted(chain.from_iterable(rows)))
    runs = [_range_rows(parts, a, b) for a, b in pairwise(bounds)]
    return runs[0] if len(runs) == 1 else heapq.merge(*runs)


class _Extent:
    """A lane's row count, first start and last end, accounted stretch by stretch."""

    __slots__ = ("count", "first_start", "last")

    def __init__(self) -> None:
        self.count = self.first_start = 0
        self.last: _SortKey | None = None  # the last row in sort order (start, end, name, id)

    def add(self, chunk: _Group) -> None:
        first = min(chunk.starts)
        self.first_start = min(self.first_start, first) if self.count else first
        self.count += len(chunk)
        top = max(zip(chunk.starts, chunk.ends(), chunk.names, chunk.ids, strict=True))
        self.last = top if self.last is None else max(self.last, top)


class Lane:
    """One lane's rows, kept as its groups' columns (in memory or spilled) and streamed in
    sorted order on demand: memory per lane is one stretch of columns, however long."""

    def __init__(self, groups: list[_Group], spill: _Spill | None, extent: _Extent) -> None:
        self._groups, self._spill = groups, spill
        self.count, self.first_start = extent.count, extent.first_start
        self.last_end = extent.last[1] if extent.last is not None else 0

    def rows(self) -> Iterator[Row]:
        """The rows sorted by (start, end, name, id), a fresh iterator per call."""
        streams = [_sorted_rows(g, self._spill) for g in self._groups]
        return streams[0] if len(streams) == 1 else heapq.merge(*streams)


class _Launches(Mapping[LaunchKey, Launch]):
    """The runtime call of each (rank, correlation), as a `Launch` built only for the keys
    a gap asks about (a million launches would otherwise be a million objects). Fed one
    stretch of runtime calls at a time with `add`; `finish` breaks correlation ties."""

    def __init__(self) -> None:
        self.index: dict[int | None, dict[int | None, int]] = {}  # rank -> corr -> call
        self.ids = array("q")
        self.starts = array("q")
        self.durs = array("q")
        self.threads: list[Thread] = []
        self._ranks: list[int | None] = []
        self._corrs: list[int | None] = []
        self._correlated = 0

    def add(self, rank: int | None, thread: Thread, g: _Group) -> None:
        base, n = len(self.ids), len(g)
        self.ids.extend(g.ids)
        self.starts.extend(g.starts)
        self.durs.extend(g.durs)
        self.threads.extend(repeat(thread, n))
        self._ranks.extend(repeat(rank, n))
        self._corrs.extend(g.corrs)
        self.index.setdefault(rank, {}).update(zip(g.corrs, range(base, base + n), strict=True))
        self._correlated += n - g.corrs.count(None)

    def finish(self) -> _Launches:
        """The latest (start, id) call where several share a (rank, correlation)."""
        for by_corr in self.index.values():
            by_corr.pop(None, None)
        ranks, corrs = self._ranks, self._corrs
        self._ranks, self._corrs = [], []
        if len(self) == self._correlated:
            return self  # every correlation id is unique: no tie to break
        order = sorted(range(len(self.ids)), key=lambda i: (self.starts[i], self.ids[i]))
        self.index = {}
        for i in order:
            if corrs[i] is not None:
                self.index.setdefault(ranks[i], {})[corrs[i]] = i
        return self

    def __getitem__(self, key: LaunchKey) -> Launch:
        i = self.index[key[0]][key[1]]
        start = self.starts[i]
        return Launch(self.ids[i], start, start + self.durs[i], self.threads[i])

    def __iter__(self) -> Iterator[LaunchKey]:
        pairs = ((rank, corr) for rank, calls in self.index.items() for corr in calls)
        return ((rank, corr) for rank, corr in pairs if corr is not None)

    def __len__(self) -> int:
        return sum(map(len, self.index.values()))


@dataclass
class Collected:
    """Everything the index build reads, per lane and per thread."""

    lanes: dict[LaneKey, Lane] = field(default_factory=dict)
    # (kind, name) -> [count, total ns, first start, last end]
    names: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    launches: Mapping[LaunchKey, Launch] = field(default_factory=dict)
    runtime: dict[Thread, list[tuple[int, int]]] = field(default_factory=dict)
    sync: dict[Thread, list[tuple[int, int]]] = field(default_factory=dict)
    comm: dict[LaneKey, int] = field(default_factory=dict)  # communication kernels per lane
    first_kernel: dict[LaneKey, int] = field(default_factory=dict)  # event id, for its queue
    longs: list[tuple[int, LaneKey, int, int]] = field(default_factory=list)  # id, lane, s, e


class TimelineCollector:
    """Feed batches of event rows with `add`; `finish` returns what the index is built from.

    Args:
        spill_rows: past this many rows held in memory, every group's columns move to a
            temporary file, so memory stays bounded however long the trace is.
    """

    def __init__(self, spill_rows: int = SPILL_ROWS) -> None:
        self._groups: dict[GroupKey, _Group] = {}
        self._spill_rows = spill_rows
        self._held = 0
        self._spill: _Spill | None = None

    def add(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Account for a batch of event rows (`event_rows.COLUMNS` order)."""
        batch: dict[GroupKey, list[tuple[Any, ...]]] = {}
        for key, run in groupby(rows, _GROUP_KEY):  # rows of one lane mostly come in runs
            found = batch.get(key)
            if found is None:
                batch[key] = list(run)
            else:
                found.extend(run)
        groups = self._groups
        for key, members in batch.items():
            if key[0] not in KIND_FAMILY:
                continue  # not drawn (memory instants): nothing to keep
            group = groups.get(key)
            if group is None:
                group = groups[key] = _Group()
            group.extend(members)
            self._held += len(members)
        if self._held > self._spill_rows:
            spill = self._spill = self._spill or _Spill()
            for group in groups.values():
                if len(group):
                    spill.write(group)
            self._held = 0

    def finish(self) -> Collected:
        """Lanes (rows sorted), names, launches, thread intervals and long events."""
        out = Collected()
        spill = self._spill
        by_lane: dict[LaneKey, list[_Group]] = {}
        launches = _Launches()
        comm_names: dict[str, bool] = {}
        sync_names: dict[str, bool] = {}
        first_kernel: dict[LaneKey, tuple[int, int]] = {}  # (start, id)
        extents: dict[LaneKey, _Extent] = {}
        for (kind, rank, device, stream, pid, tid), group in self._groups.items():
            family = KIND_FAMILY[kind]
            gpu = family in lanes_mod.GPU_FAMILIES
            key = LaneKey(family, rank, device if gpu else pid, stream if gpu else tid)
            by_lane.setdefault(key, []).append(group)
            extent = extents.setdefault(key, _Extent())
            for chunk in group.chunks(spill):
                extent.add(chunk)
                _count_names(out.names, kind, chunk)
                out.longs.extend(_longs(chunk, key))
                if kind == "kernel":
                    first = min(zip(chunk.starts, chunk.ids, strict=True))
                    if key not in first_kernel or first < first_kernel[key]:
                        first_kernel[key] = first
                    for name in set(chunk.names) - comm_names.keys():
                        comm_names[name] = is_communication_name(name)
                    comm = sum(map(comm_names.__getitem__, chunk.names))
                    out.comm[key] = out.comm.get(key, 0) + comm
                elif kind == "runtime":
                    thread = (rank, pid, tid)
                    launches.add(rank, thread, chunk)
                    intervals = list(zip(chunk.starts, chunk.ends(), strict=True))
                    out.runtime.setdefault(thread, []).extend(intervals)
                    for name in set(chunk.names) - sync_names.keys():
                        sync_names[name] = lanes_mod.is_sync_call(name)
                    synced = list(compress(intervals, map(sync_names.__getitem__, chunk.names)))
                    if synced:
                        out.sync.setdefault(thread, []).extend(synced)
        out.launches = launches.finish()
        out.lanes = {key: Lane(groups, spill, extents[key]) for key, groups in by_lane.items()}
        out.first_kernel = {key: event_id for key, (_, event_id) in first_kernel.items()}
        self._groups, self._spill = {}, None
        return out


def _count_names(names: dict[tuple[str, str], list[int]], kind: str, group: _Group) -> None:
    """Count, total duration, first start and last end per (kind, name)."""
    for name, start, dur in zip(group.names, group.starts, group.durs, strict=True):
        stats = names.get((kind, name))
        end = start + dur
        if stats is None:
            names[(kind, name)] = [1, dur, start, end]
            continue
        stats[0] += 1
        stats[1] += dur
        if start < stats[2]:
            stats[2] = start
        if end > stats[3]:
            stats[3] = end


def _longs(group: _Group, key: LaneKey) -> Iterable[tuple[int, LaneKey, int, int]]:
    long = map(LONG_NS.__lt__, group.durs)
    for event_id, start, end in compress(
        zip(group.ids, group.starts, group.ends(), strict=True), long
    ):
        yield event_id, key, start, end
