"""Per step and rank: how the GPU spent the step, and how far apart step times are.

A step is what `ingest.steps.find_steps` says (the trace's chosen marker, else
`ProfilerStep#N`, else the repeated top-level annotation family), so the summary, the
timeline's step picker and this table agree. A step's window on a rank is, with
`window="cpu"` (the default), its CPU range there, [start, start + dur); with
`window="gpu"`, its GPU extent as the summary measures a step's GPU time
(`ingest.steps.gpu_extents`: first start to last end of the GPU work launched during the
CPU range, matched by correlation, and of the step's GPU mirrors), falling back to the CPU
range for a step that launched nothing. The GPU work of that rank's devices inside the
window (clipped to it) is split exclusively into compute, communication, memcpy and
memset; idle is the window minus their union. With CPU windows, GPU work that runs behind
the CPU counts in the window it runs in, not the step that launched it; GPU windows follow
the work instead, and leave out the GPU's idle time between steps.

A step's time is its longest window over the ranks (a synchronous step waits for its
slowest rank); the spread is over those times; the slowest step is the longest (the
lowest number on a tie).

Public surface: `compute_step_breakdown`, `STEP_RULE`.
"""

from typing import Any, Literal

from sqlmodel import Session

from backend.models import Trace
from backend.models.ranks import StepBreakdownPublic, StepRow, StepSpread
from backend.services.analysis.gpu_work import GpuWork, load_gpu_work, ready, split_window
from backend.services.timeline import annotation_ranges, launched_in_steps
from ingest.distribution import distribution
from ingest.steps import StepMarking, StepRange, find_steps, gpu_extents

Window = Literal["cpu", "gpu"]
STEP_RULE = (
    "window = the step's CPU range on each rank (window=gpu: the GPU extent of the work it "
    "launched); GPU work of that rank inside it, clipped, "
    "split exclusively (compute > communication > memcpy > memset), idle = window - union "
    "of GPU busy; step time = longest window over ranks; p50 median, p95 nearest-rank"
)


def _windows(trace: Trace, marking: StepMarking, window: Window) -> dict[Any, tuple[int, int]]:
    """(rank, step) -> the step's window on that rank."""
    out = {(s.rank, s.step): (s.start_ns, s.start_ns + s.dur_ns) for s in marking.steps}
    if window == "gpu" and marking.steps:
        mirrors = annotation_ranges(trace, "gpu_annotation")
        for key, (lo, hi) in gpu_extents(
            marking, launched_in_steps(trace, marking), mirrors
        ).items():
            out[key] = (lo, hi)
    return out


def _rows(step: StepRange, work: GpuWork, lo: int, hi: int) -> list[StepRow]:
    own = work.of(step.rank)
    devices: list[int | None] = list(own.devices()) or [None]
    rows = []
    for device in devices:
        split = split_window(own.of(step.rank, device) if device is not None else own, lo, hi)
        ex = split["exclusive"]
        rows.append(
            StepRow(
                step=step.step, name=step.name, rank=step.rank,
                device=None if device is None or device < 0 else device,
                start_ns=lo, end_ns=hi, span_ns=split["span_ns"],
                compute_ns=ex["compute_ns"], communication_ns=ex["communication_ns"],
                memcpy_ns=ex["memcpy_ns"], memset_ns=ex["memset_ns"], idle_ns=ex["idle_ns"],
                slowest=False,
            )
        )  # fmt: skip
    return rows


def _spread(rows: list[StepRow]) -> StepSpread | None:
    times: dict[int, int] = {}
    for r in rows:
        times[r.step] = max(times.get(r.step, 0), r.span_ns)
    if not times:
        return None
    slowest = min(times, key=lambda n: (-times[n], n))
    dist = distribution(list(times.values()))
    return StepSpread(
        count=dist["count"], p50_ns=dist["p50_ns"], p95_ns=dist["p95_ns"],
        min_ns=dist["min_ns"], max_ns=dist["max_ns"],
        max_over_min=round(dist["max_ns"] / dist["min_ns"], 3) if dist["min_ns"] else None,
        slowest_step=slowest,
    )  # fmt: skip


def compute_step_breakdown(
    *, session: Session, trace_id: str, window: Window = "cpu"
) -> StepBreakdownPublic:
    """Every step on every rank and device, split, with the step time spread.

    Args:
        window: "cpu" (each step's CPU range) or "gpu" (the GPU extent of its work).

    Raises:
        NotFoundError: no such trace. InvalidInputError: it is not ready.
    """
    trace = ready(session, trace_id)
    ranges = annotation_ranges(trace, "annotation")
    marking = find_steps(ranges, trace.step_marker)
    work = load_gpu_work(trace) if marking.steps else GpuWork()
    windows = _windows(trace, marking, window)
    rows = [row for s in marking.steps for row in _rows(s, work, *windows[(s.rank, s.step)])]
    rows.sort(key=lambda r: (r.step, -1 if r.rank is None else r.rank, r.device or 0))
    spread = _spread(rows)
    if spread is not None:
        for r in rows:
            r.slowest = r.step == spread.slowest_step
    return StepBreakdownPublic(
        trace_id=trace_id, marker=marking.marker, marker_source=marking.source,
        window=window, items=rows, spread=spread, rule=STEP_RULE,
    )  # fmt: skip
