"""Step and phase ranges from annotations: `ProfilerStep#N` and forward/backward/optimizer.

Steps come from the CPU `ProfilerStep#N` user annotation. A step's GPU time runs from the
first start to the last end of the GPU work it launched (kernels, copies and memsets whose
runtime call began inside the CPU step) and of its `gpu_user_annotation` mirrors. The
mirrors alone are not enough: Kineto projects an annotation onto the GPU only over the work
launched directly under it, so nested annotations leave the step's mirror a few µs long.
Phases follow the naming rule in `ingest.classify.phase_of`.

Public surface: `AnnotationTrack`, `merge`.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable

from ingest.classify import phase_of, step_number
from ingest.distribution import distribution
from ingest.events import Event, EventKind
from ingest.summary.shape import Step, StepSummary

Intervals = list[tuple[int, int]]


class AnnotationTrack:
    """Feed user annotations (`add`) and their GPU mirrors (`add_gpu`)."""

    def __init__(self) -> None:
        self._names: dict[str, tuple[int | None, str | None]] = {}
        self._cpu: dict[tuple[int | None, int], tuple[int, int]] = {}
        self._gpu: dict[tuple[int | None, int], list[int]] = {}
        self.phases: dict[tuple[int | None, str], Intervals] = {}

    def _classify(self, name: str) -> tuple[int | None, str | None]:
        known = self._names.get(name)
        if known is None:
            known = self._names[name] = (step_number(name), phase_of(EventKind.ANNOTATION, name))
        return known

    def add(self, event: Event) -> None:
        """Keep a CPU annotation that is a step or a phase."""
        step, phase = self._classify(event.name)
        if step is not None:
            self._cpu[(event.rank, step)] = (event.start_ns, event.dur_ns)
        if phase is not None:
            ranges = self.phases.setdefault((event.rank, phase), [])
            ranges.append((event.start_ns, event.start_ns + event.dur_ns))

    def add_gpu(self, event: Event) -> None:
        """Widen the GPU extent of a step by one of its mirrors."""
        step = self._classify(event.name)[0]
        if step is None:
            return
        self._extend(event.rank, step, event.start_ns, event.start_ns + event.dur_ns)

    def widen(self, launched: Iterable[tuple[int | None, int, int, int]]) -> None:
        """Widen each step's GPU extent by the GPU work launched inside it.

        Args:
            launched: (rank, runtime call start, GPU start, GPU end) of each launch.
        """
        if not self._cpu:
            return
        starts: dict[int | None, tuple[list[int], list[int]]] = {}
        for rank, n in sorted(self._cpu, key=lambda k: self._cpu[k][0]):
            pair = starts.setdefault(rank, ([], []))
            pair[0].append(self._cpu[(rank, n)][0])
            pair[1].append(n)
        for rank, cpu_t, gpu_start, gpu_end in launched:
            found = starts.get(rank)
            i = bisect_right(found[0], cpu_t) - 1 if found else -1
            if found is None or i < 0:
                continue
            step = found[1][i]
            start, dur = self._cpu[(rank, step)]
            if cpu_t < start + dur:
                self._extend(rank, step, gpu_start, gpu_end)

    def _extend(self, rank: int | None, step: int, start: int, end: int) -> None:
        extent = self._gpu.get((rank, step))
        if extent is None:
            self._gpu[(rank, step)] = [start, end]
        else:
            extent[0] = min(extent[0], start)
            extent[1] = max(extent[1], end)

    def steps(self) -> StepSummary:
        """Every step with its CPU and GPU durations, and their distributions."""
        steps: list[Step] = []
        for (rank, n), (start, dur) in sorted(self._cpu.items(), key=_by_rank_step):
            extent = self._gpu.get((rank, n))
            gpu = extent[1] - extent[0] if extent else None
            steps.append({"step": n, "rank": rank, "start_ns": start, "cpu_ns": dur, "gpu_ns": gpu})
        cpu = [s["cpu_ns"] for s in steps]
        gpu_ns = [s["gpu_ns"] for s in steps if s["gpu_ns"] is not None]
        return {
            "steps": steps,
            "cpu": distribution(cpu) if cpu else None,
            "gpu": distribution(gpu_ns) if gpu_ns else None,
        }


def _by_rank_step(item: tuple[tuple[int | None, int], object]) -> tuple[int, int]:
    rank, step = item[0]
    return (-1 if rank is None else rank, step)


def merge(ranges: Intervals) -> Intervals:
    """Sorted union of ranges.

    >>> merge([(5, 9), (0, 2), (1, 3), (9, 10)])
    [(0, 3), (5, 10)]
    """
    out: Intervals = []
    for start, end in sorted(ranges):
        if out and start <= out[-1][1]:
            if end > out[-1][1]:
                out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out
