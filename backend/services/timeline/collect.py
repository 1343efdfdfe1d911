"""What the timeline index needs from a trace's events, collected while they are stored.

The ingest hands every batch of events it has just written (Arrow record batches of the
dataset's `EVENT_SCHEMA`, ids included) to `TimelineCollector.add`, so the index never
reads the events back. Per batch, the rows are grouped by (kind, rank, device, stream, pid,
tid) with a numpy sort of the key columns, and each group keeps its rows as numpy columns
(start, duration, name as an integer id, event id, correlation); everything per event
that the index needs (lane rows, name counts, launches, runtime and sync intervals, long
events) is computed per group from those columns at `finish`, by numpy, not a Python
loop per row.

The result does not depend on the order rows arrive in: a lane's "first" kernel is its
earliest (start, id), and when two runtime calls share a (rank, correlation), the launch
is the latest (start, id) one, which is what the former read-back in
(trace_id, kind, start_ns) index order gave on SQLite. Lanes, names and groups are listed
in the order they first appear, which the batches' order (ids) fixes.

Memory stays bounded however long the trace: once `SPILL_ROWS` rows are held, every
group's columns move to an unlinked temporary file (stretches of 5 integer columns, names
as ids), and `finish` and the lanes read them back one stretch at a time. Lanes are
streamed in sorted order (their sorted runs merged lazily), never held as lists of rows.

Public surface: `TimelineCollector`, `Collected`, `Lane`, `Row`, `Thread`, `SPILL_ROWS`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import repeat

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from backend.services.timeline import lanes as lanes_mod
from backend.services.timeline.gaps import Launch
from backend.services.timeline.lanes import KIND_FAMILY, LaneKey
from backend.services.timeline.pyramid import LONG_NS
from backend.services.timeline.stretches import (
    NO_CORR,
    Extent,
    Group,
    Ints,
    Lane,
    Names,
    Order,
    Row,
    Spill,
    Stretch,
)
from ingest.classify import is_communication_name

__all__ = ["SPILL_ROWS", "Collected", "Lane", "Row", "Thread", "TimelineCollector"]

Thread = tuple[int | None, int | None, int | None]  # rank, pid, tid
LaunchKey = tuple[int | None, int]  # rank, correlation
GroupKey = tuple[str, int | None, int | None, int | None, int | None, int | None]
_KEY_COLUMNS = ("rank", "device", "stream", "pid", "tid")
_DRAWN = pa.array(sorted(KIND_FAMILY), type=pa.string())
# Rows of columns held in memory before they move to a temporary file: 40 B each, so at
# most about 20 MB (a 186k-event trace never spills; a 1.86M-event one does, three times).
SPILL_ROWS = 500_000


class _Launches(Mapping[LaunchKey, Launch]):
    """The runtime call of each (rank, correlation), as a `Launch` built only for the keys
    a gap asks about (a million launches would otherwise be a million objects). Fed one
    stretch of runtime calls at a time with `add`; `finish` breaks correlation ties."""

    def __init__(self) -> None:
        self.index: dict[int | None, dict[int, int]] = {}  # rank -> corr -> call
        self._parts: list[tuple[Stretch, int]] = []  # runtime calls, their thread's number
        self._threads: dict[Thread, int] = {}
        self._rows = self._correlated = 0
        self.ids: list[int] = []
        self.starts: list[int] = []
        self.durs: list[int] = []
        self.threads: list[Thread] = []

    def add(self, thread: Thread, s: Stretch) -> None:
        correlated = np.flatnonzero(s.corrs != NO_CORR)
        calls = self.index.setdefault(thread[0], {})
        rows = (correlated + self._rows).tolist()
        calls.update(zip(s.corrs[correlated].tolist(), rows, strict=True))
        self._parts.append((s, self._threads.setdefault(thread, len(self._threads))))
        self._rows += len(s)
        self._correlated += len(correlated)

    def finish(self) -> _Launches:
        """The latest (start, id) call where several share a (rank, correlation)."""
        if not self._parts:
            return self
        calls = Stretch.join([s for s, _ in self._parts])
        numbers = np.concatenate([np.full(len(s), t) for s, t in self._parts])
        self._parts = []
        threads = list(self._threads)
        self.ids, self.starts, self.durs = (
            calls.ids.tolist(),
            calls.starts.tolist(),
            calls.durs.tolist(),
        )
        self.threads = list(map(threads.__getitem__, numbers.tolist()))
        if len(self) == self._correlated:
            return self  # every correlation id is unique: no tie to break
        order = np.lexsort((calls.ids, calls.starts))
        order = order[calls.corrs[order] != NO_CORR]
        ranks = [threads[t][0] for t in numbers[order].tolist()]
        self.index = {}
        for rank, corr, call in zip(
            ranks, calls.corrs[order].tolist(), order.tolist(), strict=True
        ):
            self.index.setdefault(rank, {})[corr] = call
        return self

    def __getitem__(self, key: LaunchKey) -> Launch:
        i = self.index[key[0]][key[1]]
        start = self.starts[i]
        return Launch(self.ids[i], start, start + self.durs[i], self.threads[i])

    def __iter__(self) -> Iterator[LaunchKey]:
        return ((rank, corr) for rank, calls in self.index.items() for corr in calls)

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
    # A lane's first kernel (else first copy): event id, for its queue or channel name.
    first_kernel: dict[LaneKey, int] = field(default_factory=dict)
    longs: list[tuple[int, LaneKey, int, int]] = field(default_factory=list)  # id, lane, s, e


class TimelineCollector:
    """Feed batches of events with `add`; `finish` returns what the index is built from.

    Args:
        spill_rows: past this many rows held in memory, every group's columns move to a
            temporary file, so memory stays bounded however long the trace is.
    """

    def __init__(self, spill_rows: int = SPILL_ROWS) -> None:
        self._groups: dict[GroupKey, Group] = {}
        self._names = Names()
        self._spill_rows = spill_rows
        self._held = 0
        self._spill: Spill | None = None

    def add(self, batch: pa.RecordBatch) -> None:
        """Account for a batch of events (the dataset's `EVENT_SCHEMA`)."""
        drawn = pc.is_in(batch.column("kind"), value_set=_DRAWN)
        if drawn.false_count:
            batch = batch.filter(drawn)  # memory instants are not drawn: nothing to keep
        if not batch.num_rows:
            return
        rows = Stretch(
            _ints(batch.column("start_ns")), _ints(batch.column("dur_ns")),
            self._names.encode(batch.column("name")), _ints(batch.column("id")),
            _ints(batch.column("correlation"), NO_CORR),
        )  # fmt: skip
        groups = self._groups
        for key, members in _grouped(batch):
            group = groups.get(key)
            if group is None:
                group = groups[key] = Group()
            group.add(rows.take(members))
        self._held += batch.num_rows
        if self._held > self._spill_rows:
            spill = self._spill = self._spill or Spill()
            for group in groups.values():
                group.spill_to(spill)
            self._held = 0

    def finish(self) -> Collected:
        """Lanes (rows sorted), names, launches, thread intervals and long events."""
        out, spill, names = Collected(), self._spill, self._names
        text = np.array(names.text, dtype=object)
        order = Order(text, names.ranks())
        comm = _Flags(names.text, is_communication_name)
        sync = _Flags(names.text, lanes_mod.is_sync_call)
        by_lane: dict[LaneKey, list[Group]] = {}
        launches = _Launches()
        first_kernel: dict[LaneKey, tuple[int, int]] = {}  # (start, id)
        first_copy: dict[LaneKey, tuple[int, int]] = {}  # names a lane of copies only
        extents: dict[LaneKey, Extent] = {}
        for (kind, rank, device, stream, pid, tid), group in self._groups.items():
            family = KIND_FAMILY[kind]
            gpu = family in lanes_mod.GPU_FAMILIES
            key = LaneKey(family, rank, device if gpu else pid, stream if gpu else tid)
            by_lane.setdefault(key, []).append(group)
            extent = extents.setdefault(key, Extent())
            for s in group.stretches(spill):
                extent.add(s)
                _count_names(out.names, kind, s, names.text)
                out.longs.extend(_longs(s, key))
                if kind == "kernel":
                    _account_kernels(out, first_kernel, comm, key, s)
                elif kind == "runtime":
                    _account_runtime(out, launches, sync, (rank, pid, tid), s)
                elif kind == "memcpy":
                    first_copy[key] = min(first_copy.get(key, _first(s)), _first(s))
        out.launches = launches.finish()
        out.lanes = {
            key: Lane(groups, spill, extents[key], order) for key, groups in by_lane.items()
        }
        out.first_kernel = {
            key: event_id for key, (_, event_id) in (first_copy | first_kernel).items()
        }
        self._groups, self._spill = {}, None
        return out


def _account_kernels(
    out: Collected,
    first_kernel: dict[LaneKey, tuple[int, int]],
    comm: _Flags,
    key: LaneKey,
    s: Stretch,
) -> None:
    """A lane's earliest (start, id) kernel and its count of communication kernels."""
    first = _first(s)
    if key not in first_kernel or first < first_kernel[key]:
        first_kernel[key] = first
    out.comm[key] = out.comm.get(key, 0) + int(comm.of(s.names).sum())


def _account_runtime(
    out: Collected, launches: _Launches, sync: _Flags, thread: Thread, s: Stretch
) -> None:
    """A thread's runtime calls: launches, busy intervals and synchronising intervals."""
    launches.add(thread, s)
    ends = s.ends
    out.runtime.setdefault(thread, []).extend(_intervals(s.starts, ends))
    synced = sync.of(s.names)
    if synced.any():
        out.sync.setdefault(thread, []).extend(_intervals(s.starts[synced], ends[synced]))


def _ints(column: pa.Array, null: int = 0) -> Ints:
    """An integer column as int64 numpy values, nulls as `null`."""
    if column.null_count:
        column = column.fill_null(null)
    values: Ints = column.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    return values


def _grouped(batch: pa.RecordBatch) -> Iterator[tuple[GroupKey, npt.NDArray[np.intp]]]:
    """The batch's rows by (kind, rank, device, stream, pid, tid): each group's key and row
    positions (ascending), groups in the order they first appear."""
    kinds = pc.dictionary_encode(batch.column("kind"))
    kind_text = kinds.dictionary.to_pylist()
    keys: list[npt.NDArray[np.int64] | npt.NDArray[np.bool_]] = [
        kinds.indices.to_numpy(zero_copy_only=False)
    ]
    for name in _KEY_COLUMNS:
        column = batch.column(name)
        if 0 < column.null_count < len(column):  # a constant null flag adds nothing
            keys.append(column.is_null().to_numpy(zero_copy_only=False))
        keys.append(_ints(column))
    order = np.lexsort(keys[::-1])  # stable: a group's rows stay in arrival order
    changed = np.zeros(len(order) - 1, dtype=bool)
    for column in keys:
        ordered = column[order]
        changed |= ordered[1:] != ordered[:-1]
    bounds = [0, *(np.flatnonzero(changed) + 1).tolist(), len(order)]
    firsts = order[bounds[:-1]]
    for g in np.argsort(firsts).tolist():
        row = int(firsts[g])
        rank, device, stream, pid, tid = (batch.column(c)[row].as_py() for c in _KEY_COLUMNS)
        key: GroupKey = (kind_text[int(keys[0][row])], rank, device, stream, pid, tid)
        yield key, order[bounds[g] : bounds[g + 1]]


class _Flags:
    """A test on names (communication kernel, synchronising call), made once per name."""

    def __init__(self, text: list[str], test: Callable[[str], bool]) -> None:
        self._known = np.array(list(map(test, text)), dtype=bool)

    def of(self, names: Ints) -> npt.NDArray[np.bool_]:
        """Whether each row's name passes."""
        result: npt.NDArray[np.bool_] = self._known[names]
        return result


def _first(s: Stretch) -> tuple[int, int]:
    """The stretch's earliest (start, id)."""
    start = s.starts.min()
    return int(start), int(s.ids[s.starts == start].min())


def _intervals(starts: Ints, ends: Ints) -> list[tuple[int, int]]:
    return list(zip(starts.tolist(), ends.tolist(), strict=True))


def _count_names(
    names: dict[tuple[str, str], list[int]], kind: str, s: Stretch, text: list[str]
) -> None:
    """Count, total duration, first start and last end per (kind, name), names in the
    order they first appear."""
    unique, first, inverse = np.unique(s.names, return_index=True, return_inverse=True)
    by_name = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[by_name], np.arange(len(unique)))
    counts = np.diff(np.append(bounds, len(s))).tolist()
    totals = np.add.reduceat(s.durs[by_name], bounds).tolist()
    lows = np.minimum.reduceat(s.starts[by_name], bounds).tolist()
    highs = np.maximum.reduceat(s.ends[by_name], bounds).tolist()
    ids = unique.tolist()
    for u in np.argsort(first).tolist():
        key = (kind, text[ids[u]])
        stats = names.get(key)
        if stats is None:
            names[key] = [counts[u], totals[u], lows[u], highs[u]]
            continue
        stats[0] += counts[u]
        stats[1] += totals[u]
        stats[2] = min(stats[2], lows[u])
        stats[3] = max(stats[3], highs[u])


def _longs(s: Stretch, key: LaneKey) -> Iterator[tuple[int, LaneKey, int, int]]:
    long = s.durs > LONG_NS
    if not long.any():
        return iter(())
    starts = s.starts[long]
    return zip(s.ids[long].tolist(), repeat(key), starts.tolist(), (starts + s.durs[long]).tolist())
