"""Streaming aggregates over normalised events: counts by kind and per-kernel statistics.

A kernel event whose args hold ``invocations`` (a row of Nsight Compute's per-kernel
summary: its duration is the average of that many launches) counts as that many launches
of the average duration, so counts, totals and shares are the launches', and its min and
max are the row's ``duration_min_ns``/``duration_max_ns``; its percentiles are over the
averages, the only durations such a file holds.

One implementation serves both `perfdash ingest --json` and the worker that stores the
stats, so the CLI and the API can never disagree. Kernels are kept as integer columns
(`array('q')`, 8 bytes a value), never as Event objects, so memory grows with the number
of kernels only; percentiles are exact because every duration is kept.

Public surface: `TraceStats`, `KernelStat`, `KernelGroupStat`, `GROUP_BYS`.
"""

from __future__ import annotations

import operator
from array import array
from bisect import bisect_right
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from itertools import accumulate
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ingest._columns import (
    NONE,
    Column,
    as_numpy,
    changes,
    filled,
    group_starts,
    group_sums,
    rows_with,
)
from ingest.classify import is_communication
from ingest.distribution import Distribution, group_distributions
from ingest.events import Event, EventBlock, EventKind
from ingest.guard import TIME_LIMIT_NS, check_columns, time_error

GROUP_BYS = ("stream", "device", "rank", "cpu_op", "cpu_op_kernel")
_LAUNCH_ARGS = {
    "grid": "grid",
    "block": "block",
    "registers per thread": "registers_per_thread",
    "shared memory": "shared_memory_bytes",
    "est. achieved occupancy %": "occupancy_pct",
}
_KERNEL = EventKind.KERNEL
_NONE = NONE  # stands for a missing device, stream, rank or correlation in the columns
_LATEST, _EARLIEST = 1 << 63, -(1 << 63)


@dataclass(frozen=True, slots=True)
class KernelStat:
    """Aggregate of every launch of one kernel name, with a representative launch config."""

    name: str
    count: int
    total_ns: int
    mean_ns: int
    min_ns: int
    max_ns: int
    pct: float  # of all kernel time
    p50_ns: int = 0
    p95_ns: int = 0
    category: str = "compute"  # or "communication" (ingest.classify.is_communication)
    grid: list[int] | None = None  # first launch's args; None when the trace lacks them
    block: list[int] | None = None
    registers_per_thread: int | None = None
    shared_memory_bytes: int | None = None
    occupancy_pct: float | None = None

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form, with the field names the API, the CLI and the table share."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class KernelGroupStat:
    """Kernel time of one stream, device, rank, launching CPU op, or (launching CPU op, kernel
    name) pair (`group_by` "cpu_op_kernel": the compare view matches renamed kernels by it)."""

    group_by: str
    key: str  # label: "stream 7 (GPU 0)", "GPU 0", "rank 3", or the CPU op's name
    device: int | None
    stream: int | None
    rank: int | None
    kernels: int  # distinct kernel names
    top_kernel: str  # the kernel name with the most time in this group
    count: int
    total_ns: int
    mean_ns: int
    min_ns: int
    max_ns: int
    p50_ns: int
    p95_ns: int
    pct: float

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form."""
        return asdict(self)


class TraceStats:
    """Feed events one at a time with `add`; read `counts`, `kernels()` and the time span.

    The kernel columns (`k_*`, index = launch order) are read by the summary builder.
    """

    def __init__(self) -> None:
        self._counts: dict[EventKind, int] = {}
        self._lo = _LATEST  # start and end of the span; the sentinels mean "no event yet"
        self._hi = _EARLIEST
        self.names: list[str] = []
        self.name_ids: dict[str, int] = {}
        self.comm: list[bool] = []  # per name id
        self.launch: list[dict[str, Any]] = []  # per name id
        self.ranges: dict[int, tuple[int, int]] = {}  # name id -> (min, max) of summary rows
        self.k_name, self.k_start, self.k_dur = array("q"), array("q"), array("q")
        self.k_device, self.k_stream = array("q"), array("q")
        self.k_rank, self.k_corr = array("q"), array("q")
        self._columns = (
            self.k_name, self.k_start, self.k_dur, self.k_device, self.k_stream, self.k_rank,
            self.k_corr,
        )  # fmt: skip
        self._appends = tuple(column.append for column in self._columns)
        # the last kernel block: its first column index, its summarising rows, their extra
        self._block: tuple[int, list[int], list[int]] = (0, [], [])

    def add(self, event: Event) -> None:
        """Account for one event."""
        kind = event.kind
        if kind is not _KERNEL:  # kernels are counted, and their span read, from the columns
            counts = self._counts
            counts[kind] = counts.get(kind, 0) + 1
            start = event.start_ns
            if start < self._lo:
                if start <= -TIME_LIMIT_NS:
                    raise time_error(start, "starts", kind, event.name)
                self._lo = start
            end = start + event.dur_ns
            if end > self._hi:
                if end >= TIME_LIMIT_NS:
                    raise time_error(end, "ends", kind, event.name)
                self._hi = end
            return
        nid = self.name_ids.get(event.name)
        if nid is None:
            nid = self._new_name(event.name, event.args)
        args = event.args
        if args is not None and "invocations" in args:
            row = (nid, event.start_ns, event.dur_ns, event.device, event.stream, event.rank,
                   event.correlation)  # fmt: skip
            self._add_summarised(row, args)
            return
        name, starts, durs, devices, streams, ranks, corrs = self._appends
        name(nid)
        starts(event.start_ns)
        durs(event.dur_ns)
        value = event.device
        devices(_NONE if value is None else value)
        value = event.stream
        streams(_NONE if value is None else value)
        value = event.rank
        ranks(_NONE if value is None else value)
        value = event.correlation
        corrs(_NONE if value is None else value)

    def _add_summarised(self, row: tuple[Any, ...], args: dict[str, Any]) -> int:
        """A row that stands for `invocations` launches of its (average) duration; returns
        how many launches that is."""
        n = args["invocations"]
        n = n if isinstance(n, int) and n > 0 else 1
        for append, value in zip(self._appends, row, strict=True):
            for _ in range(n):
                append(_NONE if value is None else value)
        lo, hi = args.get("duration_min_ns"), args.get("duration_max_ns")
        if isinstance(lo, int | float) and isinstance(hi, int | float):
            nid = row[0]
            old = self.ranges.get(nid, (_LATEST, _EARLIEST))
            self.ranges[nid] = (min(old[0], round(lo)), max(old[1], round(hi)))
        return n

    def add_block(self, block: EventBlock) -> None:
        """Account for every event of a block (the same as `add` on each, row by row), over
        its columns: a kernel block extends the kernel columns in C, looking one by one only
        at its new names and at its rows that summarise several launches."""
        n = len(block)
        if not n:
            return
        if block.kind is _KERNEL:
            self._add_kernels(block, n)
            return
        counts = self._counts
        counts[block.kind] = counts.get(block.kind, 0) + n
        self._lo = min(self._lo, min(block.start_ns))
        self._hi = max(self._hi, max(map(operator.add, block.start_ns, block.dur_ns)))

    def _add_kernels(self, block: EventBlock, n: int) -> None:
        self._add_names(block.name, block.args)
        columns = (
            list(map(self.name_ids.__getitem__, block.name)), block.start_ns, block.dur_ns,
            *(filled(c, n) for c in (block.device, block.stream, block.rank, block.correlation)),
        )  # fmt: skip
        summarised = rows_with(block.args, "invocations")
        self._block = (len(self.k_dur), summarised, [])
        if not summarised:
            for column, values in zip(self._columns, columns, strict=True):
                column.extend(values)
            return
        done = 0
        for row in [*summarised, n]:
            for column, values in zip(self._columns, columns, strict=True):
                column.extend(values[done:row])
            if row < n:
                args: dict[str, Any] = block.args[row]  # type: ignore[index,assignment]
                launches = self._add_summarised(tuple(c[row] for c in columns), args)
                self._block[2].append(launches - 1)
            done = row + 1

    def block_kernel_indices(self, rows: Sequence[int]) -> list[int]:
        """The kernel column index (launch order) of rows of the kernel block fed last; of the
        last launch for a row that summarises several, as `add` leaves it at the end."""
        first, summarised, extra = self._block
        ends = list(accumulate(extra, initial=0))
        return [first + r + ends[bisect_right(summarised, r)] for r in rows]

    def _add_names(
        self, names: Sequence[str], args: Sequence[dict[str, Any] | None] | None
    ) -> None:
        """Give a block's new kernel names ids in first-seen order, each classified by its
        first row, as `add` would."""
        ids = self.name_ids
        new = [name for name in dict.fromkeys(names) if name not in ids]
        if not new:
            return
        if args is None:
            for name in new:
                self._new_name(name, None)
            return
        first = dict(zip(reversed(names), range(len(names) - 1, -1, -1), strict=True))
        for name in new:
            self._new_name(name, args[first[name]])

    def check_kernel_times(self) -> None:
        """Refuse a kernel whose start or end lies outside ±`TIME_LIMIT_NS` (`add` checks
        every other event as it comes); called once the stream ends, over the columns.

        Raises:
            ParseError: naming the kernel and its place in launch order.
        """
        names = self.names
        k_name = self.k_name
        check_columns(_KERNEL, self.k_start, self.k_dur, lambda i: names[k_name[i]], "kernel")

    def _new_name(self, name: str, args: dict[str, Any] | None) -> int:
        """A kernel name's id; it is classified by the args of its first launch."""
        nid = len(self.names)
        self.names.append(name)
        self.name_ids[name] = nid
        self.comm.append(is_communication(Event(_KERNEL, name, 0, 0, args=args)))
        args = args or {}
        self.launch.append({to: args[src] for src, to in _LAUNCH_ARGS.items() if src in args})
        return nid

    @property
    def counts(self) -> Counter[str]:
        """Events by kind value ("kernel", "cpu_op", ...)."""
        counts = Counter({kind.value: n for kind, n in self._counts.items()})
        if self.k_dur:
            counts[_KERNEL.value] = len(self.k_dur)
        return counts

    def _span(self) -> tuple[int, int] | None:
        lo, hi = self._lo, self._hi
        if self.k_start:
            lo = min(lo, min(self.k_start))
            hi = max(hi, max(map(operator.add, self.k_start, self.k_dur)))
        return (lo, hi) if lo <= hi else None

    @property
    def start_ns(self) -> int | None:
        """The earliest event start, or None before any event."""
        span = self._span()
        return span[0] if span else None

    @property
    def end_ns(self) -> int | None:
        """The latest event end, or None before any event."""
        span = self._span()
        return span[1] if span else None

    @property
    def duration_ns(self) -> int:
        """Wall time from the first event's start to the last event's end."""
        span = self._span()
        return span[1] - span[0] if span else 0

    @property
    def kernel_ns(self) -> int:
        """Sum of all kernel durations: the denominator of every kernel `pct`."""
        return sum(self.k_dur)

    def kernels(self, top: int | None = None) -> list[KernelStat]:
        """Per-name kernel stats, largest total first (ties by name, for stable output)."""
        if not self.k_dur:
            return []
        names, durs = as_numpy(self.k_name), as_numpy(self.k_dur)
        order = np.lexsort((durs, names))
        starts = group_starts(names[order])
        gpu_total = self.kernel_ns
        stats = [
            self._kernel_stat(nid, dist, total, gpu_total)
            for nid, (dist, total) in zip(
                names[order][starts].tolist(),
                group_distributions(durs[order], starts),
                strict=True,
            )
        ]
        stats.sort(key=lambda k: (-k.total_ns, k.name))
        return stats[:top] if top is not None else stats

    def _kernel_stat(self, nid: int, dist: Distribution, total: int, gpu_total: int) -> KernelStat:
        lo, hi = self.ranges.get(nid, (dist["min_ns"], dist["max_ns"]))
        return KernelStat(
            name=self.names[nid],
            count=dist["count"],
            total_ns=total,
            mean_ns=dist["mean_ns"],
            min_ns=min(lo, dist["min_ns"]),
            max_ns=max(hi, dist["max_ns"]),
            pct=_pct(total, gpu_total),
            p50_ns=dist["p50_ns"],
            p95_ns=dist["p95_ns"],
            category="communication" if self.comm[nid] else "compute",
            **self.launch[nid],
        )

    def kernel_groups(
        self, cpu_op_of: Column | None = None, op_names: Sequence[str] = ()
    ) -> list[KernelGroupStat]:
        """Kernel time per stream, device, rank (when ranks are known), launching CPU op, and
        (launching CPU op, kernel name) pair.

        Args:
            cpu_op_of: per kernel (launch order), the index into `op_names` of the CPU op
                that launched it, or -1; None skips the `cpu_op` grouping.
            op_names: CPU op names.

        Returns:
            Rows ordered by `group_by` (as in `GROUP_BYS`), then total time, largest first
            (ties by key, then by the group's first launch).
        """
        rows: list[KernelGroupStat] = []
        if not self.k_dur:
            return rows
        ops = None if cpu_op_of is None else np.asarray(cpu_op_of, dtype=np.int64)
        for group_by in GROUP_BYS:
            keys = self._group_keys(group_by, ops)
            if keys is not None:
                rows.extend(self._groups(group_by, keys, op_names))
        return rows

    def _group_keys(
        self, group_by: str, ops: NDArray[np.int64] | None
    ) -> tuple[NDArray[np.int64], ...] | None:
        """The key columns of a grouping; a kernel whose first key is -1 is left out of the
        groupings by rank or CPU op (an unknown rank or launching op)."""
        rank = as_numpy(self.k_rank)
        if group_by == "stream":
            return rank, as_numpy(self.k_device), as_numpy(self.k_stream)
        if group_by == "device":
            return rank, as_numpy(self.k_device)
        if group_by == "rank":
            return (rank,) if bool((rank != _NONE).any()) else None
        if ops is None:
            return None
        return (ops, as_numpy(self.k_name)) if group_by == "cpu_op_kernel" else (ops,)

    def _groups(
        self, group_by: str, keys: tuple[NDArray[np.int64], ...], op_names: Sequence[str]
    ) -> list[KernelGroupStat]:
        names, durs = as_numpy(self.k_name), as_numpy(self.k_dur)
        if group_by not in ("stream", "device"):
            kept = np.flatnonzero(keys[0] != _NONE)
            keys, names, durs = tuple(k[kept] for k in keys), names[kept], durs[kept]
        if not len(durs):
            return []
        order = np.lexsort((durs, *reversed(keys)))
        starts = group_starts(*(k[order] for k in keys))
        group_of = np.empty(len(order), dtype=np.int64)
        group_of[order] = np.cumsum(changes(*(k[order] for k in keys))) - 1
        firsts = np.minimum.reduceat(order, starts).tolist()
        tops = self._top_names(group_of, names, durs, len(starts))
        gpu_total = self.kernel_ns
        rows = [
            self._group_row(group_by, key, dist, total, top, gpu_total, op_names)
            for key, (dist, total), top in zip(
                zip(*(k[order][starts].tolist() for k in keys), strict=True),
                group_distributions(durs[order], starts),
                tops,
                strict=True,
            )
        ]
        by_first = dict(zip(map(id, rows), firsts, strict=True))
        rows.sort(key=lambda r: (-r.total_ns, r.key, by_first[id(r)]))
        return rows

    def _top_names(
        self,
        group_of: NDArray[np.int64],
        names: NDArray[np.int64],
        durs: NDArray[np.int64],
        groups: int,
    ) -> list[tuple[int, int]]:
        """Per group, (distinct kernel names, the name id with the most time; ties by name)."""
        order = np.lexsort((names, group_of))
        starts = group_starts(group_of[order], names[order])
        totals = group_sums(durs[order], starts).tolist()
        pair_group = group_of[order][starts].tolist()
        pair_name = names[order][starts].tolist()
        count = [0] * groups
        best: list[tuple[int, str, int]] = [(1, "", -1)] * groups  # (-total, name, id)
        text = self.names
        for g, nid, total in zip(pair_group, pair_name, totals, strict=True):
            count[g] += 1
            candidate = (-total, text[nid], nid)
            if best[g][2] == -1 or candidate < best[g]:
                best[g] = candidate
        return [(n, b[2]) for n, b in zip(count, best, strict=True)]

    def _group_row(
        self,
        group_by: str,
        key: tuple[int, ...],
        dist: Distribution,
        total: int,
        top: tuple[int, int],
        gpu_total: int,
        op_names: Sequence[str],
    ) -> KernelGroupStat:
        rank, device, stream = _key_parts(group_by, key)
        return KernelGroupStat(
            group_by=group_by,
            key=op_names[key[0]] if group_by.startswith("cpu_op") else _label(rank, device, stream),
            device=device,
            stream=stream,
            rank=rank,
            kernels=top[0],
            top_kernel=self.names[top[1]],
            count=dist["count"],
            total_ns=total,
            mean_ns=dist["mean_ns"],
            min_ns=dist["min_ns"],
            max_ns=dist["max_ns"],
            p50_ns=dist["p50_ns"],
            p95_ns=dist["p95_ns"],
            pct=_pct(total, gpu_total),
        )


def _key_parts(group_by: str, key: tuple[int, ...]) -> tuple[int | None, int | None, int | None]:
    """(rank, device, stream) of a group key, None where unknown or not part of the key."""
    if group_by == "stream":
        rank, device, stream = key
    elif group_by == "device":
        (rank, device), stream = key, _NONE
    elif group_by == "rank":
        (rank,), device, stream = key, _NONE, _NONE
    else:
        return None, None, None
    return tuple(None if v == _NONE else v for v in (rank, device, stream))  # type: ignore[return-value]


def _label(rank: int | None, device: int | None, stream: int | None) -> str:
    """A readable group key.

    >>> _label(None, 0, 7), _label(3, 1, None), _label(2, None, None)
    ('stream 7 (GPU 0)', 'rank 3 GPU 1', 'rank 2')
    """
    parts = []
    if rank is not None:
        parts.append(f"rank {rank}")
    if device is not None:
        parts.append(f"GPU {device}")
    text = " ".join(parts)
    return f"stream {stream} ({text})" if stream is not None else text


def _pct(part: int, whole: int) -> float:
    return round(100.0 * part / whole, 3) if whole else 0.0
