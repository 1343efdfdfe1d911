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
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ingest.classify import is_communication
from ingest.distribution import distribution
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
_NONE = -1  # stands for a missing device, stream, rank or correlation in the columns
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
        self._appends = tuple(
            column.append
            for column in (
                self.k_name, self.k_start, self.k_dur, self.k_device, self.k_stream,
                self.k_rank, self.k_corr,
            )
        )  # fmt: skip

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
            nid = self._new_name(event)
        args = event.args
        if args is not None and "invocations" in args:
            self._add_summarised(event, nid, args)
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

    def _add_summarised(self, event: Event, nid: int, args: dict[str, Any]) -> None:
        """A row that stands for `invocations` launches of its (average) duration."""
        n = args["invocations"]
        n = n if isinstance(n, int) and n > 0 else 1
        row = (nid, event.start_ns, event.dur_ns, *(
            _NONE if v is None else v
            for v in (event.device, event.stream, event.rank, event.correlation)
        ))  # fmt: skip
        for append, value in zip(self._appends, row, strict=True):
            for _ in range(n):
                append(value)
        lo, hi = args.get("duration_min_ns"), args.get("duration_max_ns")
        if isinstance(lo, int | float) and isinstance(hi, int | float):
            old = self.ranges.get(nid, (_LATEST, _EARLIEST))
            self.ranges[nid] = (min(old[0], round(lo)), max(old[1], round(hi)))

    def add_block(self, block: EventBlock) -> None:
        """Account for every event of a block (the same as `add` on each, row by row)."""
        if block.kind is _KERNEL or not len(block):
            for event in block.events():
                self.add(event)
            return
        counts = self._counts
        counts[block.kind] = counts.get(block.kind, 0) + len(block)
        self._lo = min(self._lo, min(block.start_ns))
        self._hi = max(self._hi, max(map(operator.add, block.start_ns, block.dur_ns)))

    def check_kernel_times(self) -> None:
        """Refuse a kernel whose start or end lies outside ±`TIME_LIMIT_NS` (`add` checks
        every other event as it comes); called once the stream ends, over the columns.

        Raises:
            ParseError: naming the kernel and its place in launch order.
        """
        names = self.names
        k_name = self.k_name
        check_columns(_KERNEL, self.k_start, self.k_dur, lambda i: names[k_name[i]], "kernel")

    def _new_name(self, event: Event) -> int:
        nid = len(self.names)
        self.names.append(event.name)
        self.name_ids[event.name] = nid
        self.comm.append(is_communication(event))
        args = event.args or {}
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
        by_name: list[list[int]] = [[] for _ in self.names]
        for nid, dur in zip(self.k_name, self.k_dur, strict=True):
            by_name[nid].append(dur)
        gpu_total = self.kernel_ns
        stats = [
            self._kernel_stat(nid, durs, gpu_total) for nid, durs in enumerate(by_name) if durs
        ]
        stats.sort(key=lambda k: (-k.total_ns, k.name))
        return stats[:top] if top is not None else stats

    def _kernel_stat(self, nid: int, durs: list[int], gpu_total: int) -> KernelStat:
        dist = distribution(durs)
        total = sum(durs)
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
        self, cpu_op_of: Sequence[int] | None = None, op_names: Sequence[str] = ()
    ) -> list[KernelGroupStat]:
        """Kernel time per stream, device, rank (when ranks are known), launching CPU op, and
        (launching CPU op, kernel name) pair.

        Args:
            cpu_op_of: per kernel (launch order), the index into `op_names` of the CPU op
                that launched it, or -1; None skips the `cpu_op` grouping.
            op_names: CPU op names.

        Returns:
            Rows ordered by `group_by` (as in `GROUP_BYS`), then total time, largest first.
        """
        rows: list[KernelGroupStat] = []
        for group_by in GROUP_BYS:
            keys = self._group_keys(group_by, cpu_op_of)
            if keys is not None:
                rows.extend(self._groups(group_by, keys, op_names))
        return rows

    def _group_keys(self, group_by: str, cpu_op_of: Sequence[int] | None) -> Sequence[Any] | None:
        if group_by == "stream":
            return list(zip(self.k_rank, self.k_device, self.k_stream, strict=True))
        if group_by == "device":
            return list(zip(self.k_rank, self.k_device, strict=True))
        if group_by == "rank":
            return self.k_rank if any(r != _NONE for r in self.k_rank) else None
        if group_by == "cpu_op_kernel" and cpu_op_of is not None:
            width = len(self.names)  # one int per pair: op index * width + name id
            return [_NONE if op == _NONE else op * width + nid
                    for op, nid in zip(cpu_op_of, self.k_name, strict=True)]  # fmt: skip
        return cpu_op_of if group_by == "cpu_op" else None

    def _groups(
        self, group_by: str, keys: Sequence[Any], op_names: Sequence[str]
    ) -> list[KernelGroupStat]:
        durs: dict[Any, list[int]] = {}
        per_name: dict[Any, dict[int, int]] = {}
        for key, nid, dur in zip(keys, self.k_name, self.k_dur, strict=True):
            if key == _NONE:  # a kernel whose launching op is unknown
                continue
            values = durs.get(key)
            if values is None:
                values = durs[key] = []
                per_name[key] = {}
            values.append(dur)
            names = per_name[key]
            names[nid] = names.get(nid, 0) + dur
        gpu_total = self.kernel_ns
        rows = [
            self._group_row(group_by, key, values, per_name[key], gpu_total, op_names)
            for key, values in durs.items()
        ]
        rows.sort(key=lambda r: (-r.total_ns, r.key))
        return rows

    def _group_row(
        self,
        group_by: str,
        key: Any,
        values: list[int],
        names: dict[int, int],
        gpu_total: int,
        op_names: Sequence[str],
    ) -> KernelGroupStat:
        rank, device, stream = _key_parts(group_by, key)
        dist = distribution(values)
        total = sum(values)
        top = min(names.items(), key=lambda kv: (-kv[1], self.names[kv[0]]))[0]
        if group_by == "cpu_op_kernel":
            key //= len(self.names)
        return KernelGroupStat(
            group_by=group_by,
            key=op_names[key] if group_by.startswith("cpu_op") else _label(rank, device, stream),
            device=device,
            stream=stream,
            rank=rank,
            kernels=len(names),
            top_kernel=self.names[top],
            count=dist["count"],
            total_ns=total,
            mean_ns=dist["mean_ns"],
            min_ns=dist["min_ns"],
            max_ns=dist["max_ns"],
            p50_ns=dist["p50_ns"],
            p95_ns=dist["p95_ns"],
            pct=_pct(total, gpu_total),
        )


def _key_parts(group_by: str, key: Any) -> tuple[int | None, int | None, int | None]:
    """(rank, device, stream) of a group key, None where unknown or not part of the key."""
    if group_by == "stream":
        rank, device, stream = key
    elif group_by == "device":
        (rank, device), stream = key, _NONE
    elif group_by == "rank":
        rank, device, stream = key, _NONE, _NONE
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
