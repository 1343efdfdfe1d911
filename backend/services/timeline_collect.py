"""What the timeline index needs from a trace's events, collected while they are inserted.

The ingest hands every batch of event rows it has just written (`event_store.COLUMNS`
order, ids included) to `TimelineCollector.add`, so the index never reads the events back.
Per batch, rows are grouped by (kind, rank, device, stream, pid, tid) and kept as columns;
everything per event that the index needs (lane rows, name counts, launches, runtime and
sync intervals, long events) is then computed per group from those columns at `finish`,
mostly inside C-level builtins (`map`, `zip`, `sorted`, `dict`), not a Python loop per row.

The result does not depend on the order rows arrive in: a lane's "first" kernel is its
earliest (start, id), and when two runtime calls share a (rank, correlation), the launch
is the latest (start, id) one, which is what the former read-back in
(trace_id, kind, start_ns) index order gave on SQLite.

Lanes are streamed in sorted order from those columns (their sorted runs merged lazily),
never held as lists of row tuples, so the index build adds little memory to the columns'
8 bytes a value, however long a lane is.

Public surface: `TimelineCollector`, `Collected`, `Lane`, `Row`, `Thread`.
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import compress, groupby, islice, pairwise, repeat
from operator import add, itemgetter, le, lt
from typing import Any

from backend.services import timeline_lanes as lanes_mod
from backend.services.timeline_gaps import Launch
from backend.services.timeline_lanes import KIND_FAMILY, LaneKey
from backend.services.timeline_pyramid import LONG_NS
from ingest.classify import is_communication_name

Row = tuple[int, int, str, int, int | None]  # start, end, name, event id, correlation
Thread = tuple[int | None, int | None, int | None]  # rank, pid, tid
LaunchKey = tuple[int | None, int]  # rank, correlation
# Positions in an event row (`event_store.COLUMNS`).
_ID, _KIND, _NAME, _START, _DUR, _RANK, _DEVICE, _STREAM, _PID, _TID, _CORR = (
    0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
)  # fmt: skip
_GROUP_KEY = itemgetter(_KIND, _RANK, _DEVICE, _STREAM, _PID, _TID)
_COLUMNS = tuple(itemgetter(i) for i in (_START, _DUR, _NAME, _ID, _CORR))
GroupKey = tuple[str, int | None, int | None, int | None, int | None, int | None]


class _Group:
    """The rows of one (kind, rank, device, stream, pid, tid), as columns (integers in
    `array('q')`: 8 bytes a value, where a list of ints costs 40)."""

    __slots__ = ("corrs", "durs", "ids", "names", "starts")

    def __init__(self) -> None:
        self.starts = array("q")
        self.durs = array("q")
        self.names: list[str] = []
        self.ids = array("q")
        self.corrs: list[int | None] = []

    def extend(self, rows: list[tuple[Any, ...]]) -> None:
        columns: tuple[array[int] | list[Any], ...] = (
            self.starts, self.durs, self.names, self.ids, self.corrs,
        )  # fmt: skip
        for column, get in zip(columns, _COLUMNS, strict=True):
            column.extend(map(get, rows))

    def ends(self) -> Iterator[int]:
        return map(add, self.starts, self.durs)


def _increasing(values: Sequence[int]) -> bool:
    return all(map(lt, values, islice(values, 1, None)))


# A group in more sorted runs than this is sorted whole instead of merged run by run
# (only an input in no particular order gets there; a heap of thousands of runs is slower).
_MAX_RUNS = 64


def _run_bounds(g: _Group) -> list[int] | None:
    """Where the group's rows, in arrival order, stop being sorted by (start, end, name,
    id): [0, b1, ..., n], or None past `_MAX_RUNS` runs."""
    starts, n = g.starts, len(g.starts)
    if _increasing(starts):
        return [0, n]  # the common case: a Kineto or nsys lane arrives in start order
    durs, names, ids = g.durs, g.names, g.ids
    bounds = [0]
    for i in compress(range(1, n), map(le, islice(starts, 1, None), starts)):
        s, p = starts[i], starts[i - 1]
        if s < p or (s + durs[i], names[i], ids[i]) < (p + durs[i - 1], names[i - 1], ids[i - 1]):
            bounds.append(i)
            if len(bounds) > _MAX_RUNS:
                return None
    bounds.append(n)
    return bounds


def _sorted_rows(g: _Group) -> Iterator[Row]:
    """The group's rows sorted by (start, end, name, id), made one at a time: its sorted runs
    merged lazily, so no lane is ever held as a list of tuples (only a group in no order
    at all is sorted as a list)."""
    bounds = _run_bounds(g)
    if bounds is None:
        return iter(sorted(zip(g.starts, g.ends(), g.names, g.ids, g.corrs, strict=True)))
    starts, durs, ids = memoryview(g.starts), memoryview(g.durs), memoryview(g.ids)
    runs = [_run(g, starts, durs, ids, a, b) for a, b in pairwise(bounds)]
    return runs[0] if len(runs) == 1 else heapq.merge(*runs)


def _run(
    g: _Group, starts: memoryview, durs: memoryview, ids: memoryview, a: int, b: int
) -> Iterator[Row]:
    """Rows a..b-1 of the group (the integer columns are sliced as views, not copied)."""
    run_starts = starts[a:b]
    ends = map(add, run_starts, durs[a:b])
    return zip(run_starts, ends, g.names[a:b], ids[a:b], g.corrs[a:b], strict=True)


class Lane:
    """One lane's rows, kept as its groups' columns and streamed in sorted order on demand:
    memory per lane is 8 bytes a column value, whatever the lane's length."""

    def __init__(self, groups: list[_Group]) -> None:
        self._groups = groups
        self.count = sum(len(g.starts) for g in groups)
        self.first_start = min(min(g.starts) for g in groups)
        # The end of the last row in sort order (start, end, name, id).
        last = max(max(zip(g.starts, g.ends(), g.names, g.ids, strict=True)) for g in groups)
        self.last_end: int = last[1]

    def rows(self) -> Iterator[Row]:
        """The rows sorted by (start, end, name, id), a fresh iterator per call."""
        streams = [_sorted_rows(g) for g in self._groups]
        return streams[0] if len(streams) == 1 else heapq.merge(*streams)


class _Launches(Mapping[LaunchKey, Launch]):
    """The runtime call of each (rank, correlation), as a `Launch` built only for the keys
    a gap asks about (a million launches would otherwise be a million objects)."""

    def __init__(self) -> None:
        self.index: dict[int | None, dict[int | None, int]] = {}  # rank -> corr -> call
        self.ids = array("q")
        self.starts = array("q")
        self.durs = array("q")
        self.threads: list[Thread] = []

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
    """Feed batches of event rows with `add`; `finish` returns what the index is built from."""

    def __init__(self) -> None:
        self._groups: dict[GroupKey, _Group] = {}

    def add(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Account for a batch of event rows (`event_store.COLUMNS` order)."""
        batch: dict[GroupKey, list[tuple[Any, ...]]] = {}
        for key, run in groupby(rows, _GROUP_KEY):  # rows of one lane mostly come in runs
            found = batch.get(key)
            if found is None:
                batch[key] = list(run)
            else:
                found.extend(run)
        groups = self._groups
        for key, members in batch.items():
            group = groups.get(key)
            if group is None:
                group = groups[key] = _Group()
            group.extend(members)

    def finish(self) -> Collected:
        """Lanes (rows sorted), names, launches, thread intervals and long events."""
        out = Collected()
        by_lane: dict[LaneKey, list[_Group]] = {}
        calls: list[tuple[int | None, Thread, _Group]] = []
        comm_names: dict[str, bool] = {}
        sync_names: dict[str, bool] = {}
        first_kernel: dict[LaneKey, tuple[int, int]] = {}  # (start, id)
        for (kind, rank, device, stream, pid, tid), group in self._groups.items():
            family = KIND_FAMILY.get(kind)
            if family is None:
                continue  # not drawn (memory instants)
            gpu = family in lanes_mod.GPU_FAMILIES
            key = LaneKey(family, rank, device if gpu else pid, stream if gpu else tid)
            by_lane.setdefault(key, []).append(group)
            _count_names(out.names, kind, group)
            out.longs.extend(_longs(group, key))
            if kind == "kernel":
                first = min(zip(group.starts, group.ids, strict=True))
                if key not in first_kernel or first < first_kernel[key]:
                    first_kernel[key] = first
                for name in set(group.names) - comm_names.keys():
                    comm_names[name] = is_communication_name(name)
                out.comm[key] = out.comm.get(key, 0) + sum(map(comm_names.__getitem__, group.names))
            elif kind == "runtime":
                thread = (rank, pid, tid)
                calls.append((rank, thread, group))
                out.runtime.setdefault(thread, []).extend(
                    zip(group.starts, group.ends(), strict=True)
                )
                for name in set(group.names) - sync_names.keys():
                    sync_names[name] = lanes_mod.is_sync_call(name)
                is_sync = map(sync_names.__getitem__, group.names)
                synced = list(compress(zip(group.starts, group.ends(), strict=True), is_sync))
                if synced:
                    out.sync.setdefault(thread, []).extend(synced)
        out.launches = _launch_calls(calls)  # copies what it needs of the runtime columns
        out.lanes = {key: Lane(groups) for key, groups in by_lane.items()}
        out.first_kernel = {key: event_id for key, (_, event_id) in first_kernel.items()}
        self._groups = {}
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


def _launch_calls(calls: list[tuple[int | None, Thread, _Group]]) -> _Launches:
    """The runtime call of each (rank, correlation); the latest (start, id) one when several
    share it."""
    out = _Launches()
    correlated = 0
    for rank, thread, g in calls:
        base, n = len(out.ids), len(g.ids)
        out.ids.extend(g.ids)
        out.starts.extend(g.starts)
        out.durs.extend(g.durs)
        out.threads.extend(repeat(thread, n))
        out.index.setdefault(rank, {}).update(zip(g.corrs, range(base, base + n), strict=True))
        correlated += n - g.corrs.count(None)
    for by_corr in out.index.values():
        by_corr.pop(None, None)
    if len(out) == correlated:
        return out  # every correlation id is unique: no tie to break
    ranks = [rank for rank, _, g in calls for _ in g.ids]
    corrs = [corr for _, _, g in calls for corr in g.corrs]
    order = sorted(range(len(out.ids)), key=lambda i: (out.starts[i], out.ids[i]))
    out.index = {}
    for i in order:
        if corrs[i] is not None:
            out.index.setdefault(ranks[i], {})[corrs[i]] = i
    return out
