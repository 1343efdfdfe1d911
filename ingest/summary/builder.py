"""`SummaryBuilder`: one pass over the events, then the `Summary` the pages read.

`add` runs on every event of million-event traces, so it only appends integers to columns
(kernels in `TraceStats`, the rest in the tracks here) and classifies each distinct name
once. Everything else happens in `finish`: sorts and sweeps over those columns.

Public surface: `SummaryBuilder`, `MAX_GAPS`, `has_timeline`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from operator import add as _plus
from typing import Any

from ingest._columns import NONE, rows_with
from ingest.classify import FUSION_RULE, fusion_pattern, is_host_sync, phase_of
from ingest.distribution import distribution
from ingest.events import Event, EventBlock, EventKind, TraceHeader
from ingest.stats import KernelGroupStat, TraceStats
from ingest.summary.annotations import AnnotationTrack, merge
from ingest.summary.comm import CommTrack
from ingest.summary.copies import CopyTrack
from ingest.summary.cpu import CpuRanges
from ingest.summary.memory import MemoryTrack
from ingest.summary.shape import (
    SUMMARY_VERSION,
    DeviceSummary,
    FusionSummary,
    GpuSummary,
    IdleGap,
    LaunchSummary,
    Summary,
    TimeSplit,
)
from ingest.summary.timesplit import Category, Gap, add_splits, split_device

MAX_GAPS = 20
_KERNEL, _CPU_OP, _RUNTIME = EventKind.KERNEL, EventKind.CPU_OP, EventKind.RUNTIME
_MEMCPY, _MEMSET, _MEMORY = EventKind.MEMCPY, EventKind.MEMSET, EventKind.MEMORY
_ANNOTATION, _GPU_ANNOTATION = EventKind.ANNOTATION, EventKind.GPU_ANNOTATION
_COMM_CODE = Category.COMMUNICATION << 1

DeviceKey = tuple[int, int]  # (rank or -1, device or -1)


class SummaryBuilder:
    """Feed every event with `add`; `finish` returns the summary dict.

    `stats` holds the kernel columns and per-name stats; after `finish`,
    `kernel_groups()` also knows which CPU op launched each kernel.

    Args:
        stats: a `TraceStats` the caller feeds itself, each event before this builder
            sees it (so the two share one set of kernel columns); by default the builder
            owns one and feeds it from `add`.
        step_marker: the step marker the user chose for this trace (`ingest.steps`); None
            finds one.
    """

    def __init__(self, stats: TraceStats | None = None, step_marker: str | None = None) -> None:
        self._owns_stats = stats is None
        self.stats = TraceStats() if stats is None else stats
        self._cpu = CpuRanges()
        self._copies = CopyTrack()
        self._memory = MemoryTrack()
        self._annotations = AnnotationTrack(step_marker)
        self._comm = CommTrack()
        self._kernel_op: list[int] | None = None

    def add(self, event: Event) -> None:
        """Account for one event."""
        if self._owns_stats:
            self.stats.add(event)
        kind = event.kind
        if kind is _KERNEL:
            args = event.args
            if args is not None and "Collective name" in args:
                self._comm.add(len(self.stats.k_dur) - 1, args)
        elif kind is _CPU_OP:
            self._cpu.add_op(event)
        elif kind is _RUNTIME:
            self._cpu.add_runtime(event)
        elif kind is _MEMCPY or kind is _MEMSET:
            self._copies.add(event)
        elif kind is _MEMORY:
            self._memory.add(event)
        elif kind is _ANNOTATION:
            self._annotations.add(event)
        elif kind is _GPU_ANNOTATION:
            self._annotations.add_gpu(event)

    def add_block(self, block: EventBlock) -> None:
        """Account for every event of a block (the same as `add` on each, row by row), over
        its columns."""
        if self._owns_stats:
            self.stats.add_block(block)
        kind = block.kind
        if kind is _KERNEL:
            rows = rows_with(block.args, "Collective name")
            if rows:  # the few communication kernels with record_param_comms metadata
                args = block.args
                assert args is not None
                for index, row in zip(self.stats.block_kernel_indices(rows), rows, strict=True):
                    self._comm.add(index, args[row])  # type: ignore[arg-type]
        elif kind is _CPU_OP:
            self._cpu.add_op_block(block)
        elif kind is _RUNTIME:
            self._cpu.add_runtime_block(block)
        elif kind is _MEMCPY or kind is _MEMSET:
            self._copies.add_block(block)
        elif kind is _MEMORY:
            self._memory.add_block(block)
        elif kind is _ANNOTATION:
            self._annotations.add_block(block)
        elif kind is _GPU_ANNOTATION:
            self._annotations.add_gpu_block(block)

    def finish(self, header: TraceHeader) -> dict[str, Any]:
        """The JSON-ready `Summary` of everything added (`header`: the trace's header)."""
        devices, gaps = self._devices()
        questions = [(rank, t) for (rank, _), gap_list in gaps.items() for _, t in gap_list]
        parents, context = self._cpu.sweep(questions)
        runtime = self._runtime_index()
        launch = self._launch(parents, runtime)
        timeline = has_timeline(header)
        if not timeline:
            for device in devices:
                device["time"] = None
            gaps = {}
        summary: Summary = {
            "version": SUMMARY_VERSION,
            "events": sum(self.stats.counts.values()),
            "timeline": timeline,
            "gpu": self._gpu(devices, timeline),
            "devices": devices,
            "steps": self._annotations.steps(self._launched(runtime)),
            "launch": launch,
            "transfers": self._copies.transfers(),
            "memory": self._memory.devices(),
            "memory_phases": self._memory.phases(self._phases()),
            "fusion": self._fusion(),
            "communication": self._comm.summary(self.stats),
            "idle_gaps": _idle_gaps(gaps, context),
        }
        return dict(summary)

    def kernel_groups(self) -> list[KernelGroupStat]:
        """Kernel stats per stream, device, rank and launching CPU op (after `finish`)."""
        return self.stats.kernel_groups(self._kernel_op, self._cpu.names)

    def _span(self) -> tuple[int, int] | None:
        starts = [self.stats.k_start, self._copies.c_start]
        durs = [self.stats.k_dur, self._copies.c_dur]
        firsts = [min(s) for s in starts if s]
        if not firsts:
            return None
        lasts = [max(map(_plus, s, d)) for s, d in zip(starts, durs, strict=True) if s]
        return min(firsts), max(lasts)

    def _boundaries(self, origin: int) -> tuple[dict[DeviceKey, list[int]], dict[Any, set[int]]]:
        per_device: dict[DeviceKey, list[int]] = {}
        streams: dict[DeviceKey, set[int]] = {}
        st, cp = self.stats, self._copies
        comm, category = st.comm, cp.category
        columns = (
            (st.k_start, st.k_dur, st.k_device, st.k_rank, st.k_stream, st.k_name, True),
            (cp.c_start, cp.c_dur, cp.c_device, cp.c_rank, cp.c_stream, cp.c_name, False),
        )
        for starts, durs, devs, ranks, strms, names, is_kernel in columns:
            last: DeviceKey | None = None
            keys: list[int] = []
            seen: set[int] = set()
            for s, d, dev, rank, stream, nid in zip(
                starts, durs, devs, ranks, strms, names, strict=True
            ):
                if last is None or dev != last[1] or rank != last[0]:
                    last = (rank, dev)
                    keys = per_device.setdefault(last, [])
                    seen = streams.setdefault(last, set())
                code = (_COMM_CODE if comm[nid] else 0) if is_kernel else category[nid] << 1
                rel = s - origin
                keys.append((rel << 4) | code | 1)
                keys.append(((rel + d) << 4) | code)
                seen.add(stream)
        return per_device, streams

    def _devices(self) -> tuple[list[DeviceSummary], dict[DeviceKey, list[Gap]]]:
        span = self._span()
        if span is None:
            return [], {}
        origin, end = span
        per_device, streams = self._boundaries(origin)
        launches: dict[DeviceKey, int] = {}
        for dev, rank in zip(self.stats.k_device, self.stats.k_rank, strict=True):
            launches[(rank, dev)] = launches.get((rank, dev), 0) + 1
        devices: list[DeviceSummary] = []
        gaps: dict[DeviceKey, list[Gap]] = {}
        for key in sorted(per_device):
            split, device_gaps = split_device(per_device[key], end - origin, MAX_GAPS)
            gaps[key] = [(dur, origin + offset) for dur, offset in device_gaps]
            devices.append(
                {
                    "device": key[1],
                    "rank": None if key[0] == NONE else key[0],
                    "streams": sorted(s for s in streams[key] if s != NONE),
                    "kernels": launches.get(key, 0),
                    "time": split,
                }
            )
        return devices, gaps

    def _gpu(self, devices: list[DeviceSummary], timeline: bool) -> GpuSummary:
        splits: list[TimeSplit] = [d["time"] for d in devices if d["time"] is not None]
        time = add_splits(splits) if splits else add_splits([_empty_split()])
        return {
            "devices": len(devices),
            "kernels": len(self.stats.k_dur),
            "kernel_ns": self.stats.kernel_ns,
            "time": time if timeline else None,
        }

    def _runtime_index(self) -> dict[Any, int]:
        """Runtime call index by correlation id (keyed with the rank when ranks are known);
        the first call wins when several share one. Built from the reversed columns, so
        the dict's own overwrite keeps the first, without a Python loop per call."""
        corrs, ranks = self._cpu.rt_corr, self._cpu.rt_rank
        n = len(corrs)
        keys: Sequence[Any] = corrs
        if ranks.count(NONE) != n:
            keys = [c if r == NONE else (r, c) for c, r in zip(corrs, ranks, strict=True)]
        runtime: dict[Any, int] = dict(zip(reversed(keys), range(n - 1, -1, -1), strict=True))
        for rank in {NONE, *ranks}:
            runtime.pop(NONE if rank == NONE else (rank, NONE), None)
        return runtime

    def _launched(self, runtime: dict[Any, int]) -> Iterator[tuple[int | None, int, int, int]]:
        """(rank, runtime start, GPU start, GPU end) of every kernel, copy and memset."""
        st, cp, rt_start = self.stats, self._copies, self._cpu.rt_start
        for corrs, ranks, starts, durs in (
            (st.k_corr, st.k_rank, st.k_start, st.k_dur),
            (cp.c_corr, cp.c_rank, cp.c_start, cp.c_dur),
        ):
            for corr, rank, start, dur in zip(corrs, ranks, starts, durs, strict=True):
                i = runtime.get(corr if rank == NONE else (rank, corr)) if corr != NONE else None
                if i is not None:
                    yield (None if rank == NONE else rank), rt_start[i], start, start + dur

    def _launch(self, parents: list[int], runtime: dict[Any, int]) -> LaunchSummary:
        cpu, st = self._cpu, self.stats
        delays: list[int] = []
        kernel_op = [NONE] * len(st.k_dur)
        rt_start = cpu.rt_start
        for k, (corr, rank, start) in enumerate(zip(st.k_corr, st.k_rank, st.k_start, strict=True)):
            i = runtime.get(corr if rank == NONE else (rank, corr)) if corr != NONE else None
            if i is not None:
                delays.append(start - rt_start[i])
                kernel_op[k] = parents[i]
        self._kernel_op = kernel_op
        return {
            "delay": distribution(delays) if delays else None,
            "matched": len(delays),
            "unmatched": len(kernel_op) - len(delays),
        }

    def _phases(self) -> dict[tuple[int | None, str], list[tuple[int, int]]]:
        ranges = {key: list(value) for key, value in self._annotations.phases.items()}
        cpu = self._cpu
        backward = {i for i, name in enumerate(cpu.names) if phase_of(_CPU_OP, name)}
        if backward:
            for nid, start, end, thread in zip(
                cpu.op_name, cpu.op_start, cpu.op_end, cpu.op_thread, strict=True
            ):
                if nid in backward:
                    rank = cpu.thread_rank[thread]
                    key = (None if rank == NONE else rank, "backward")
                    ranges.setdefault(key, []).append((start, end))
        return {key: merge(value) for key, value in ranges.items()}

    def _fusion(self) -> FusionSummary:
        st = self.stats
        totals = [0] * len(st.names)
        for nid, dur in zip(st.k_name, st.k_dur, strict=True):
            totals[nid] += dur
        by_pattern: dict[str, int] = {}
        for name, total in zip(st.names, totals, strict=True):
            pattern = fusion_pattern(name)
            if pattern is not None:
                by_pattern[pattern] = by_pattern.get(pattern, 0) + total
        fused, kernel_ns = sum(by_pattern.values()), sum(totals)
        return {
            "fused_ns": fused,
            "kernel_ns": kernel_ns,
            "fused_pct": round(100.0 * fused / kernel_ns, 3) if kernel_ns else None,
            "rule": FUSION_RULE,
            "by_pattern": dict(sorted(by_pattern.items(), key=lambda kv: -kv[1])),
        }


def has_timeline(header: TraceHeader) -> bool:
    """Whether the events' times are real; a parser that lays events on a made-up serial
    timeline (Nsight Compute) sets `metadata["timeline"] = False`."""
    return header.metadata.get("timeline") is not False


def _idle_gaps(
    gaps: dict[DeviceKey, list[Gap]], context: list[tuple[str | None, str | None]]
) -> list[IdleGap]:
    out: list[IdleGap] = []
    answers = iter(context)
    for (rank, device), device_gaps in gaps.items():
        for dur, start in device_gaps:
            op, runtime = next(answers)
            out.append(
                {
                    "device": device,
                    "rank": None if rank == NONE else rank,
                    "start_ns": start,
                    "dur_ns": dur,
                    "cpu_op": op,
                    "runtime": runtime,
                    "host_sync": any(is_host_sync(n) for n in (op, runtime) if n),
                }
            )
    out.sort(key=lambda g: (-g["dur_ns"], g["start_ns"]))
    return out


def _empty_split() -> TimeSplit:
    return split_device([], 0, 0)[0]
