"""Step and phase ranges from annotations.

Every CPU annotation range is kept (annotations are few) so that `ingest.steps.find_steps`,
the one rule for what a step is, can choose the step marker once the trace is read:
`ProfilerStep#N`, else a repeated top-level range (`record_function` or NVTX), or the marker
the user chose for the trace. A step's GPU time runs from the first start to the last end of
the GPU work it launched (kernels, copies and memsets whose runtime call began inside the
CPU step) and of its `gpu_user_annotation` mirrors. The mirrors alone are not enough: Kineto
projects an annotation onto the GPU only over the work launched directly under it, so nested
annotations leave the step's mirror a few µs long. Phases follow the naming rule in
`ingest.classify.phase_of`.

Public surface: `AnnotationTrack`, `merge`.
"""

from __future__ import annotations

from collections.abc import Iterable

from ingest.classify import phase_of
from ingest.events import Event, EventKind
from ingest.steps import Launch, Range, find_steps, summarize
from ingest.summary.shape import StepSummary

Intervals = list[tuple[int, int]]


class AnnotationTrack:
    """Feed user annotations (`add`) and their GPU mirrors (`add_gpu`).

    Args:
        step_marker: the step marker the user chose for this trace, if any.
    """

    def __init__(self, step_marker: str | None = None) -> None:
        self._step_marker = step_marker
        self._phase_of: dict[str, str | None] = {}
        self._ranges: list[Range] = []
        self._mirrors: list[Range] = []
        self.phases: dict[tuple[int | None, str], Intervals] = {}

    def add(self, event: Event) -> None:
        """Keep a CPU annotation: a step candidate, and a phase when it names one."""
        name = event.name
        self._ranges.append(
            Range(name, event.start_ns, event.dur_ns, event.rank, event.pid, event.tid)
        )
        phase = self._phase_of.get(name, "")
        if phase == "":
            phase = self._phase_of[name] = phase_of(EventKind.ANNOTATION, name)
        if phase is not None:
            ranges = self.phases.setdefault((event.rank, phase), [])
            ranges.append((event.start_ns, event.start_ns + event.dur_ns))

    def add_gpu(self, event: Event) -> None:
        """Keep a GPU mirror; those of the step marker widen their step's GPU extent."""
        self._mirrors.append(Range(event.name, event.start_ns, event.dur_ns, event.rank))

    def steps(self, launched: Iterable[Launch]) -> StepSummary:
        """Every step with its CPU and GPU durations, their distributions and the marker.

        Args:
            launched: (rank, runtime call start, GPU start, GPU end) of each launch.
        """
        marking = find_steps(self._ranges, self._step_marker)
        return summarize(marking, launched, self._mirrors)


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
