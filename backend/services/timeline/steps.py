"""Steps of a stored trace: the step picker's windows and the step marker a user chooses.

Both apply `ingest.steps.find_steps`, the rule the ingest summary used, to the trace's stored
annotation events, so the page, the API and the summary agree on what a step is. Choosing a
marker re-derives the summary's `steps` from the stored events (no re-upload) and keeps the
choice on the trace (`traces.step_marker`), which a re-ingest applies again.

Public surface: `list_steps`, `set_step_marker`.
"""

from collections.abc import Iterator
from typing import Any

from sqlmodel import Session

from backend.models.timeline import StepMarkerOption, StepsPublic, StepWindow
from backend.models.traces import Trace
from backend.services.datasets import batches_of_events, query_events
from backend.services.errors import InvalidInputError
from backend.services.timeline.windows import ready_trace
from ingest.steps import Launch, Range, StepMarking, find_steps, summarize

_GPU_WORK = ["kernel", "memcpy", "memset"]


def annotation_ranges(trace: Trace, kind: str) -> list[Range]:
    """Every stored event of `kind` ("annotation" or "gpu_annotation"), in the parser's
    order; annotations are few."""
    sql = "SELECT name, start_ns, dur_ns, rank, pid, tid FROM {events} WHERE kind = ? ORDER BY id"
    return [Range(*row) for row in query_events(trace, sql, [kind])]


def _public(trace_id: str, marking: StepMarking, chosen: str | None) -> StepsPublic:
    windows: dict[int, StepWindow] = {}
    for s in marking.steps:  # one window per step number, over every rank that ran it
        end = s.start_ns + s.dur_ns
        w = windows.get(s.step)
        if w is None:
            windows[s.step] = StepWindow(step=s.step, name=s.name, start_ns=s.start_ns, end_ns=end)
        else:
            w.start_ns, w.end_ns = min(w.start_ns, s.start_ns), max(w.end_ns, end)
    options = [StepMarkerOption(marker=o.marker, count=o.count, top_level=o.top_level)
               for o in marking.options]  # fmt: skip
    return StepsPublic(
        trace_id=trace_id, items=[windows[n] for n in sorted(windows)], marker=marking.marker,
        marker_source=marking.source, chosen=chosen, options=options,
    )  # fmt: skip


def list_steps(*, session: Session, trace_id: str, marker: str | None = None) -> StepsPublic:
    """The trace's step windows, in step order, and the marker they come from.

    Args:
        marker: a marker to try (`?step_marker=`), without keeping it; by default the
            trace's chosen marker, else the rule's.

    Raises:
        NotFoundError: no such trace. InvalidInputError: it is not ready.
    """
    trace = ready_trace(session, trace_id)
    ranges = annotation_ranges(trace, "annotation")
    marking = find_steps(ranges, marker if marker is not None else trace.step_marker)
    return _public(trace_id, marking, trace.step_marker)


def set_step_marker(*, session: Session, trace_id: str, marker: str | None) -> StepsPublic:
    """Keep `marker` as the trace's step marker (None: back to the rule) and re-derive the
    summary's steps from the stored events.

    Raises:
        NotFoundError: no such trace. InvalidInputError: it is not ready, or no annotation
            range of it is named by `marker`.
    """
    trace = ready_trace(session, trace_id)
    marking = find_steps(annotation_ranges(trace, "annotation"), marker)
    if marker is not None and not marking.steps:
        known = ", ".join(o.marker for o in marking.options[:10]) or "none"
        raise InvalidInputError(
            f"step_marker {marker!r}: no annotation range of trace {trace_id} has that name "
            f"or family; its annotations: {known}"
        )
    mirrors = annotation_ranges(trace, "gpu_annotation")
    steps = summarize(marking, launched_in_steps(trace, marking), mirrors)
    trace.summary = {**(trace.summary or {}), "steps": dict(steps)}
    trace.step_marker = marker
    session.add(trace)
    session.commit()
    return _public(trace_id, marking, marker)


def launched_in_steps(trace: Trace, marking: StepMarking) -> Iterator[Launch]:
    """(rank, runtime call start, GPU start, GPU end) of the GPU work launched during the
    steps: runtime calls inside the steps' span, matched to GPU work by correlation id (per
    rank; the first call wins), as the ingest summary matches them."""
    if not marking.steps:
        return
    lo = min(s.start_ns for s in marking.steps)
    hi = max(s.start_ns + s.dur_ns for s in marking.steps)
    calls: dict[tuple[Any, int], int] = {}
    runtime = (
        "SELECT rank, correlation, start_ns FROM {events} WHERE kind = 'runtime' "
        "AND start_ns >= ? AND start_ns < ? AND correlation IS NOT NULL ORDER BY start_ns, id"
    )
    for rank, corr, start in query_events(trace, runtime, [lo, hi]):
        calls.setdefault((rank, corr), start)
    work = (
        "SELECT rank, correlation, start_ns, dur_ns FROM {events} "
        "WHERE kind IN (SELECT unnest(?)) AND start_ns >= ? AND correlation IS NOT NULL "
        "ORDER BY id"
    )
    for batch in batches_of_events(trace, work, [_GPU_WORK, lo]):
        for rank, corr, start, dur in batch:
            cpu_t = calls.get((rank, corr))
            if cpu_t is not None:
                yield rank, cpu_t, start, start + dur
