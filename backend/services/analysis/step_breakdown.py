"""Per step and rank: how the GPU spent the step, and how far apart step times are.

A step is what `ingest.steps.find_steps` says (the trace's chosen marker, else
`ProfilerStep#N`, else the repeated top-level annotation family), so the summary, the
timeline's step picker and this table agree. A step's window on a rank is its CPU range
there, [start, start + dur): the GPU work of that rank's devices inside the window (clipped
to it) is split exclusively into compute, communication, memcpy and memset; idle is the
window minus their union. GPU work that runs behind the CPU counts in the window it runs
in, not the step that launched it.

A step's time is its longest window over the ranks (a synchronous step waits for its
slowest rank); the spread is over those times; the slowest step is the longest (the
lowest number on a tie).

Public surface: `compute_step_breakdown`, `STEP_RULE`.
"""

from sqlmodel import Session

from backend.models.ranks import StepBreakdownPublic, StepRow, StepSpread
from backend.services.analysis.gpu_work import GpuWork, load_gpu_work, ready, split_window
from backend.services.analysis.stored import read_events
from ingest.distribution import distribution
from ingest.steps import Range, StepRange, find_steps

STEP_RULE = (
    "window = the step's CPU range on each rank; GPU work of that rank inside it, clipped, "
    "split exclusively (compute > communication > memcpy > memset), idle = window - union "
    "of GPU busy; step time = longest window over ranks; p50 median, p95 nearest-rank"
)
_RANGES = "SELECT name, start_ns, dur_ns, rank, pid, tid FROM {events} WHERE kind = ? ORDER BY id"


def _rows(step: StepRange, work: GpuWork) -> list[StepRow]:
    lo, hi = step.start_ns, step.start_ns + step.dur_ns
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


def compute_step_breakdown(*, session: Session, trace_id: str) -> StepBreakdownPublic:
    """Every step on every rank and device, split, with the step time spread.

    Raises:
        NotFoundError: no such trace. InvalidInputError: it is not ready.
    """
    trace = ready(session, trace_id)
    ranges = [Range(*r) for r in read_events(trace, _RANGES, ["annotation"])]
    marking = find_steps(ranges, trace.step_marker)
    work = load_gpu_work(trace) if marking.steps else GpuWork()
    rows = [row for step in marking.steps for row in _rows(step, work)]
    rows.sort(key=lambda r: (r.step, -1 if r.rank is None else r.rank, r.device or 0))
    spread = _spread(rows)
    if spread is not None:
        for r in rows:
            r.slowest = r.step == spread.slowest_step
    return StepBreakdownPublic(
        trace_id=trace_id, marker=marking.marker, marker_source=marking.source,
        items=rows, spread=spread, rule=STEP_RULE,
    )  # fmt: skip
