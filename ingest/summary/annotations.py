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
from itertools import compress

from ingest._columns import one
from ingest.classify import phase_of
from ingest.events import Event, EventBlock, EventKind
from ingest.steps import Launch, Range, find_steps, summarize
from ingest.summary.shape import StepSummary

Intervals = list[tuple[int, int]]


class AnnotationTrack:
    """Feed user annotations (`add`, `add_block`) and their GPU mirrors (`add_gpu`,
    `add_gpu_block`).

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
        self.add_block(one(event))

    def add_block(self, block: EventBlock) -> None:
        """Keep a block of CPU annotations (each name's phase looked up once)."""
        names, starts, durs, ranks = block.name, block.start_ns, block.dur_ns, block.rank
        c = block.column
        self._ranges.extend(map(Range, names, starts, durs, c(ranks), c(block.pid), c(block.tid)))
        phase_of_name = self._phase_of
        for name in dict.fromkeys(names):
            if name not in phase_of_name:
                phase_of_name[name] = phase_of(EventKind.ANNOTATION, name)
        phases = list(map(phase_of_name.__getitem__, names))
        if phases.count(None) == len(phases):
            return
        for row in compress(range(len(phases)), phases):  # the few phase ranges
            rank = None if ranks is None else ranks[row]
            ranges = self.phases.setdefault((rank, phases[row]), [])  # type: ignore[arg-type]
            ranges.append((starts[row], starts[row] + durs[row]))

    def add_gpu(self, event: Event) -> None:
        """Keep a GPU mirror; those of the step marker widen their step's GPU extent."""
        self.add_gpu_block(one(event))

    def add_gpu_block(self, block: EventBlock) -> None:
        """Keep a block of GPU mirrors."""
        self._mirrors.extend(
            map(Range, block.name, block.start_ns, block.dur_ns, block.column(block.rank))
        )

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
