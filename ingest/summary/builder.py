"""`SummaryBuilder`: one pass over the events, then the `Summary` the pages read.

`add` runs on every event of million-event traces, so it only appends integers to columns
(kernels in `TraceStats`, the rest in the tracks here) and classifies each distinct name
once. Everything else happens in `finish`: sorts and sweeps over those columns.

Public surface: `SummaryBuilder`, `MAX_GAPS`, `has_timeline`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ingest._columns import NONE, as_numpy, changes, rows_with, sums_by
from ingest.classify import FUSION_RULE, fusion_pattern, is_host_sync, phase_of
from ingest.distribution import group_distributions
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

DeviceKey = tuple[int, int]  # (rank or -1, device or -1)
_NONE_AS_NONE = {NONE: None}.get  # r -> None if r == NONE else r, as `_NONE_AS_NONE(r, r)`


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
        self._kernel_op: NDArray[np.int64] | None = None

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

    def flush(self) -> None:
        """Take in what the tracks hold in batches (`finish` does it too; the aggregator
        calls it while it can still say which part of the stream broke a bound)."""
        self._memory.flush()

    def finish(self, header: TraceHeader) -> dict[str, Any]:
        """The JSON-ready `Summary` of everything added (`header`: the trace's header)."""
        self.flush()
        devices, gaps = self._devices()
        questions = [(rank, t) for (rank, _), gap_list in gaps.items() for _, t in gap_list]
        parents, context = self._cpu.sweep(questions)
        launch = self._launch(parents)
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
            "steps": self._annotations.steps(self._launched()),
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

    def _intervals(self) -> dict[str, NDArray[np.int64]]:
        """Every kernel, then every copy and memset, as columns; `category` is the
        `Category` the time split gives it, `kernel` 1 for a kernel."""
        st, cp = self.stats, self._copies
        comm = np.asarray(st.comm, dtype=np.int64) * Category.COMMUNICATION
        kernel_names, copy_names = as_numpy(st.k_name), as_numpy(cp.c_name)
        category = np.concatenate(
            (comm[kernel_names], np.asarray(cp.category, dtype=np.int64)[copy_names])
        )
        columns = {
            name: np.concatenate((as_numpy(kernels), as_numpy(copies)))
            for name, kernels, copies in (
                ("start", st.k_start, cp.c_start), ("dur", st.k_dur, cp.c_dur),
                ("rank", st.k_rank, cp.c_rank), ("device", st.k_device, cp.c_device),
                ("stream", st.k_stream, cp.c_stream),
            )
        }  # fmt: skip
        kernel = np.zeros(len(category), dtype=np.int64)
        kernel[: len(kernel_names)] = 1
        return columns | {"category": category, "kernel": kernel}

    def _devices(self) -> tuple[list[DeviceSummary], dict[DeviceKey, list[Gap]]]:
        c = self._intervals()
        if not len(c["start"]):
            return [], {}
        origin = int(c["start"].min())
        starts = c["start"] - origin
        ends = starts + c["dur"]
        span = int(ends.max())
        order = np.lexsort((c["device"], c["rank"]))
        firsts = np.flatnonzero(changes(c["rank"][order], c["device"][order]))
        devices: list[DeviceSummary] = []
        gaps: dict[DeviceKey, list[Gap]] = {}
        for rows in np.split(order, firsts[1:]):
            key = (int(c["rank"][rows[0]]), int(c["device"][rows[0]]))
            split, device_gaps = split_device(
                starts[rows], ends[rows], c["category"][rows], span, MAX_GAPS
            )
            gaps[key] = [(dur, origin + offset) for dur, offset in device_gaps]
            streams = np.unique(c["stream"][rows])
            devices.append(
                {
                    "device": key[1],
                    "rank": None if key[0] == NONE else key[0],
                    "streams": streams[streams != NONE].tolist(),
                    "kernels": int(c["kernel"][rows].sum()),
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

    def _runtime_of(self, corrs: Sequence[int], ranks: Sequence[int]) -> NDArray[np.int64]:
        """Per kernel or copy, the index of its runtime call (the first with its rank and
        correlation id), or -1: matched per distinct rank with a sorted search."""
        cpu = self._cpu
        rt_corr, rt_rank = as_numpy(cpu.rt_corr), as_numpy(cpu.rt_rank)
        corr, rank = as_numpy(corrs), as_numpy(ranks)
        out = np.full(len(corr), NONE, dtype=np.int64)
        for r in np.unique(rt_rank).tolist():
            calls = np.flatnonzero((rt_rank == r) & (rt_corr != NONE))
            keys, first = np.unique(rt_corr[calls], return_index=True)
            mine = np.flatnonzero((rank == r) & (corr != NONE))
            if not len(keys) or not len(mine):
                continue
            at = np.minimum(np.searchsorted(keys, corr[mine]), len(keys) - 1)
            hit = keys[at] == corr[mine]
            out[mine[hit]] = calls[first[at[hit]]]
        return out

    def _launched(self) -> Iterator[tuple[int | None, int, int, int]]:
        """(rank, runtime start, GPU start, GPU end) of every kernel, copy and memset."""
        st, cp = self.stats, self._copies
        rt_start = as_numpy(self._cpu.rt_start)
        for corrs, ranks, starts, durs in (
            (st.k_corr, st.k_rank, st.k_start, st.k_dur),
            (cp.c_corr, cp.c_rank, cp.c_start, cp.c_dur),
        ):
            calls = self._runtime_of(corrs, ranks)
            rows = np.flatnonzero(calls != NONE)
            start = as_numpy(starts)[rows]
            rank = as_numpy(ranks)[rows].tolist()
            yield from zip(
                map(_NONE_AS_NONE, rank, rank),
                rt_start[calls[rows]].tolist(),
                start.tolist(),
                (start + as_numpy(durs)[rows]).tolist(),
                strict=True,
            )

    def _launch(self, parents: list[int]) -> LaunchSummary:
        st = self.stats
        calls = self._runtime_of(st.k_corr, st.k_rank)
        matched = np.flatnonzero(calls != NONE)
        delays = as_numpy(st.k_start)[matched] - as_numpy(self._cpu.rt_start)[calls[matched]]
        kernel_op = np.full(len(calls), NONE, dtype=np.int64)
        kernel_op[matched] = np.asarray(parents, dtype=np.int64)[calls[matched]]
        self._kernel_op = kernel_op
        start = np.zeros(1, dtype=np.intp)
        return {
            "delay": group_distributions(np.sort(delays), start)[0][0] if len(delays) else None,
            "matched": len(matched),
            "unmatched": len(calls) - len(matched),
        }

    def _phases(self) -> dict[tuple[int | None, str], list[tuple[int, int]]]:
        ranges = {key: list(value) for key, value in self._annotations.phases.items()}
        cpu = self._cpu
        backward = [i for i, name in enumerate(cpu.names) if phase_of(_CPU_OP, name)]
        if backward:
            rows = np.flatnonzero(np.isin(as_numpy(cpu.op_name), backward))
            rank = as_numpy(cpu.thread_rank)[as_numpy(cpu.op_thread)[rows]]
            starts, ends = as_numpy(cpu.op_start)[rows], as_numpy(cpu.op_end)[rows]
            for r in np.unique(rank).tolist():
                mine = rank == r
                key = (None if r == NONE else r, "backward")
                spans = zip(starts[mine].tolist(), ends[mine].tolist(), strict=True)
                ranges.setdefault(key, []).extend(spans)
        return {key: merge(value) for key, value in ranges.items()}

    def _fusion(self) -> FusionSummary:
        st = self.stats
        totals = sums_by(st.k_name, st.k_dur, len(st.names))
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
    empty = np.zeros(0, dtype=np.int64)
    return split_device(empty, empty, empty, 0, 0)[0]
