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

Public surface: `TraceStats`, `KernelStat`, `KernelGroupStat`, `GROUP_BYS` (the last two
from `ingest.kernel_groups`).
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

from ingest._columns import (
    NONE,
    Column,
    as_numpy,
    filled,
    group_starts,
    rows_with,
)
from ingest.classify import is_communication
from ingest.distribution import Distribution, group_distributions
from ingest.events import Event, EventBlock, EventKind
from ingest.guard import TIME_LIMIT_NS, check_columns, time_error
from ingest.kernel_groups import GROUP_BYS, KernelGroupStat, kernel_groups, pct

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
            pct=pct(total, gpu_total),
            p50_ns=dist["p50_ns"],
            p95_ns=dist["p95_ns"],
            category="communication" if self.comm[nid] else "compute",
            **self.launch[nid],
        )

    def kernel_groups(
        self, cpu_op_of: Column | None = None, op_names: Sequence[str] = ()
    ) -> list[KernelGroupStat]:
        """Kernel time per stream, device, rank (when ranks are known), launching CPU op, and
        (launching CPU op, kernel name) pair: see `ingest.kernel_groups.kernel_groups`."""
        return kernel_groups(self, cpu_op_of, op_names)


__all__ = ["GROUP_BYS", "KernelGroupStat", "KernelStat", "TraceStats"]
