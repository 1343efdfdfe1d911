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

The split is summed from each device's exclusive busy segments (`gpu_derive`, derived at
ingest), clipped to the window, with DuckDB; only the step marking (few annotation events)
and, for GPU windows, the launches are read from the events per request.

Public surface: `compute_step_breakdown`, `STEP_RULE`.
"""

from typing import Any, Literal

from sqlmodel import Session

from backend.models import Trace
from backend.models.ranks import StepBreakdownPublic, StepRow, StepSpread
from backend.services.analysis.derived import query_derived
from backend.services.analysis.gpu_derive import EXCLUSIVE
from backend.services.analysis.gpu_work import NO_RANK, ready
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


_DEVICES = "SELECT DISTINCT rank, device FROM {gpu_devices} ORDER BY rank, device"
# Each window's busy time per device and label: its segments clipped to it.
_SUMS = """
SELECT w.i, s.device, s.label, sum(least(s.end_ns, w.hi) - greatest(s.start_ns, w.lo))::BIGINT
FROM (SELECT unnest(?) AS i, unnest(?) AS rank, unnest(?) AS lo, unnest(?) AS hi) AS w
JOIN {gpu_segments} AS s ON s.rank = w.rank AND s.end_ns > w.lo AND s.start_ns < w.hi
GROUP BY ALL
"""


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


def _devices(trace: Trace) -> dict[int, list[int]]:
    """Each rank's GPU devices (rank and device `NO_RANK` where none)."""
    out: dict[int, list[int]] = {}
    for rank, device in query_derived(trace, _DEVICES):
        out.setdefault(rank, []).append(device)
    return out


def _sums(trace: Trace, keys: list[Any], windows: dict[Any, tuple[int, int]]) -> dict[Any, int]:
    """(window index, device, label) -> the busy ns of that label inside the window."""
    bounds = [windows[k] for k in keys]
    rows = query_derived(trace, _SUMS, [
        list(range(len(keys))), [NO_RANK if k[0] is None else k[0] for k in keys],
        [lo for lo, _ in bounds], [hi for _, hi in bounds],
    ])  # fmt: skip
    return {(i, device, label): ns for i, device, label, ns in rows}


def _rows(
    trace: Trace, steps: list[StepRange], windows: dict[Any, tuple[int, int]]
) -> list[StepRow]:
    devices, keys = _devices(trace), [(s.rank, s.step) for s in steps]
    sums = _sums(trace, keys, windows) if steps else {}
    rows = []
    for i, step in enumerate(steps):
        lo, hi = windows[keys[i]]
        span = max(hi - lo, 0)
        for device in devices.get(NO_RANK if step.rank is None else step.rank, [None]):
            parts = [sums.get((i, device, label), 0) for label in range(len(EXCLUSIVE))]
            rows.append(StepRow(
                step=step.step, name=step.name, rank=step.rank,
                device=None if device is None or device < 0 else device,
                start_ns=lo, end_ns=hi, span_ns=span,
                **dict(zip(EXCLUSIVE, parts, strict=True)), idle_ns=span - sum(parts),
                slowest=False,
            ))  # fmt: skip
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
    windows = _windows(trace, marking, window)
    rows = _rows(trace, marking.steps, windows)
    rows.sort(key=lambda r: (r.step, -1 if r.rank is None else r.rank, r.device or 0))
    spread = _spread(rows)
    if spread is not None:
        for r in rows:
            r.slowest = r.step == spread.slowest_step
    return StepBreakdownPublic(
        trace_id=trace_id, marker=marking.marker, marker_source=marking.source,
        window=window, items=rows, spread=spread, rule=STEP_RULE,
    )  # fmt: skip
