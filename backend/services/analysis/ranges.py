"""Per range name statistics: `nsys stats --report nvtx_sum` over stored annotation events.

A range is an `annotation` event (NVTX push/pop or start/end range from nsys, a torch
`user_annotation`, i.e. `record_function` or `ProfilerStep#N`) or a `gpu_annotation` (torch's
`gpu_user_annotation`: the same range's span on the GPU). As nsys does, ranges are grouped by
their text, domain and style (PushPop and StartEnd rows of one text are two rows); NVTX marks
(no duration) are not ranges and are left out. GPU-side ranges are listed as their own rows
(`side = "gpu"`), never merged into the CPU range of the same name: the two measure
different things (CPU time inside the range against GPU time from its first kernel to its
last). Median interpolates between the middle two instances and the standard deviation is
the sample one (n - 1), as in nsys; time share is within the side.

Public surface: `compute_ranges`, `compute_range_durations`.
"""

from typing import Any

from sqlmodel import Session

from backend.models.ranges import RangeDurationsPublic, RangesPublic, RangeStat, Side
from backend.services.analysis.stored import read_events
from backend.services.traces import get_trace

KINDS: dict[Side, str] = {"cpu": "annotation", "gpu": "gpu_annotation"}
MAX_LIMIT = 10_000

# One row per stored range, with its side, domain and style read from args (nsys writes
# both; torch neither). Marks are stored with style 'Mark' and are not ranges.
_RANGES = """
    SELECT CASE WHEN kind = 'gpu_annotation' THEN 'gpu' ELSE 'cpu' END AS side,
        name, args ->> '$.domain' AS domain, args ->> '$.style' AS style, start_ns, dur_ns
    FROM {events}
    WHERE kind IN ('annotation', 'gpu_annotation')
        AND coalesce(args ->> '$.style', '') <> 'Mark'
"""

_STATS = f"""
    WITH r AS ({_RANGES})
    SELECT name, domain, style, side, count(*), sum(dur_ns)::BIGINT, avg(dur_ns),
        median(dur_ns::DOUBLE), min(dur_ns), max(dur_ns), coalesce(stddev_samp(dur_ns), 0),
        100.0 * sum(dur_ns) / sum(sum(dur_ns)) OVER (PARTITION BY side)
    FROM r GROUP BY name, domain, style, side
    ORDER BY side, sum(dur_ns) DESC, name, domain NULLS FIRST, style NULLS FIRST
"""

NO_RANGES = (
    "This trace has no ranges: annotate code with NVTX (nvtx.annotate, "
    "torch.cuda.nvtx.range_push) under nsys, or torch.profiler.record_function under the "
    "torch profiler."
)


def _stat(row: tuple[Any, ...]) -> RangeStat:
    name, domain, style, side, count, total, avg, med, lo, hi, std, pct = row
    return RangeStat(
        name=name, domain=domain, style=style, side=side, count=count, total_ns=total,
        avg_ns=float(avg), med_ns=float(med), min_ns=lo, max_ns=hi, std_ns=float(std),
        time_pct=round(float(pct or 0.0), 4),
    )  # fmt: skip


def compute_ranges(
    *, session: Session, trace_id: str, side: Side | None = None, limit: int = 1000
) -> RangesPublic:
    """Per range name (and domain, style, side): count, total, mean, median, min, max, std.

    Args:
        session: the database session.
        trace_id: the trace.
        side: only CPU or only GPU ranges; both when None.
        limit: at most this many rows, by side then total time.

    Returns:
        The rows, CPU side first, each side by total time descending.

    Raises:
        NotFoundError: no such trace.
    """
    trace = get_trace(session=session, trace_id=trace_id)
    rows = [_stat(r) for r in read_events(trace, _STATS)]
    if side is not None:
        rows = [r for r in rows if r.side == side]
    return RangesPublic(
        trace_id=trace_id, items=rows[:limit], total=len(rows), note="" if rows else NO_RANGES
    )


def compute_range_durations(
    *,
    session: Session,
    trace_id: str,
    name: str,
    domain: str | None = None,
    side: Side = "cpu",
    limit: int = 5000,
) -> RangeDurationsPublic:
    """Every instance of one range (start and duration), for a distribution chart.

    Args:
        session: the database session.
        trace_id: the trace.
        name: the range text (without the nsys domain prefix).
        domain: the NVTX domain; None for the default domain and torch ranges.
        side: CPU or GPU ranges.
        limit: at most this many instances, the longest, listed by start.

    Returns:
        Starts and durations, and how many instances there are.

    Raises:
        NotFoundError: no such trace.
    """
    trace = get_trace(session=session, trace_id=trace_id)
    sql = f"""
        WITH r AS ({_RANGES}), m AS (
            SELECT start_ns, dur_ns FROM r
            WHERE side = ? AND name = ? AND domain IS NOT DISTINCT FROM ?)
        SELECT start_ns, dur_ns, (SELECT count(*) FROM m) FROM (
            SELECT * FROM m ORDER BY dur_ns DESC, start_ns LIMIT ?) ORDER BY start_ns
    """
    rows = read_events(trace, sql, [side, name, domain, limit])
    return RangeDurationsPublic(
        trace_id=trace_id, name=name, domain=domain, side=side,
        start_ns=[r[0] for r in rows], dur_ns=[r[1] for r in rows],
        count=rows[0][2] if rows else 0,
    )  # fmt: skip
