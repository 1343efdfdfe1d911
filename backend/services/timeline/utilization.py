"""GPU utilisation from the hidden per-device lanes' busy blocks: over the whole trace for
the overview strip, or over a window per device for the counter tracks (`counters`).

A device lane's blocks at a level are its GPU work (all streams) merged across gaps
shorter than the level's width; each block's busy time is spread evenly over its extent
into equal bins. Both callers read the finest level (from 2: device lanes store no level
1) at which the blocks of every lane number at most `OVERVIEW_SCAN`: the overview counts a
lane's blocks from its `level_blocks`, a window counts the blocks that touch it.

Public surface: `get_overview`, `window_level`, `device_busy`, `OVERVIEW_SCAN`.
"""

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from sqlmodel import Session

from backend.models.timeline import OverviewBin, TimelineLane, TimelineOverview
from backend.models.traces import Trace
from backend.services.datasets import query_events
from backend.services.timeline.stored_lanes import list_lanes
from backend.services.timeline.windows import ready_trace

OVERVIEW_SCAN = 50_000


def get_overview(*, session: Session, trace_id: str, bins: int = 400) -> TimelineOverview:
    """GPU utilisation (share of time a device runs any GPU work) over the whole trace,
    from the finest pyramid level that is cheap to read whole.

    Raises:
        NotFoundError: no such trace.
        InvalidInputError: the trace is not ready.
    """
    trace = ready_trace(session, trace_id)
    visible = list_lanes(session, trace_id)
    devices = list_lanes(session, trace_id, hidden=True)
    t0 = min((lane.first_ns for lane in visible), default=0)
    t1 = max((lane.last_ns for lane in visible), default=t0)
    if not devices or t1 <= t0:
        return TimelineOverview(
            trace_id=trace_id, trace_start_ns=t0, trace_end_ns=t1, devices=0, level=None, bins=[]
        )
    lanes = [*visible, *devices]
    counts = [sum(lane.level_blocks[i] for lane in lanes) for i in range(_levels(lanes))]
    level = _finest_level(counts)
    rows = _device_blocks(trace, devices, level, t0, t1)
    busy = _bin_busy(((s, e, b) for _, s, e, b in rows), t0, t1, bins)
    width = (t1 - t0) / bins
    out = [
        OverviewBin(
            start_ns=round(t0 + i * width),
            end_ns=round(t0 + (i + 1) * width),
            utilization=min(1.0, b / (width * len(devices))),
        )
        for i, b in enumerate(busy)
    ]
    return TimelineOverview(
        trace_id=trace_id, trace_start_ns=t0, trace_end_ns=t1, devices=len(devices),
        level=level, bins=out,
    )  # fmt: skip


def window_level(trace: Trace, lanes: Sequence[TimelineLane], ws: int, we: int) -> int:
    """The overview's level rule, counting the blocks (of every lane) that touch [ws, we].

    For the whole trace this is the overview's level: every block lies inside it.

    Args:
        trace: a ready trace.
        lanes: any of its lanes (for the number of levels).
        ws: window start, absolute ns.
        we: window end.
    """
    counts = [0] * _levels(lanes)
    sql = "SELECT level, count(*) FROM {blocks} WHERE start_ns <= ? AND end_ns >= ? GROUP BY level"
    for level, count in query_events(trace, sql, [we, ws]):
        if 1 <= level <= len(counts):
            counts[level - 1] = count
    return _finest_level(counts)


def device_busy(
    trace: Trace, devices: Sequence[TimelineLane], level: int, ws: int, we: int, bins: int
) -> dict[int, list[float]]:
    """Busy ns of each device lane in each of `bins` equal bins of [ws, we).

    Args:
        trace: a ready trace.
        devices: its hidden device lanes.
        level: the pyramid level to read (`window_level`).
        ws: window start, absolute ns.
        we: window end.
        bins: number of bins.

    Returns:
        Lane id -> busy ns per bin.
    """
    by_lane: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
    for lane, start, end, busy in _device_blocks(trace, devices, level, ws, we):
        by_lane[lane].append((start, end, busy))
    return {d.lane: _bin_busy(by_lane[d.lane], ws, we, bins) for d in devices}


def _levels(lanes: Sequence[TimelineLane]) -> int:
    return len(lanes[0].level_blocks) if lanes else 0


def _finest_level(counts: list[int]) -> int:
    """The finest level from 2 (device lanes store no level 1) whose count fits the scan."""
    levels = len(counts)
    for level in range(min(2, levels), levels + 1):
        if level >= 1 and counts[level - 1] <= OVERVIEW_SCAN:
            return level
    return max(levels, 1)


def _device_blocks(
    trace: Trace, devices: Sequence[TimelineLane], level: int, ws: int, we: int
) -> list[tuple[Any, ...]]:
    sql = (
        "SELECT lane, start_ns, end_ns, busy_ns FROM {blocks} WHERE level = ? "
        "AND lane IN (SELECT unnest(?)) AND start_ns < ? AND end_ns > ?"
    )
    return query_events(trace, sql, [level, [d.lane for d in devices], we, ws])


def _bin_busy(rows: Iterable[tuple[int, int, int]], t0: int, t1: int, bins: int) -> list[float]:
    """Spread each block's busy time evenly over its extent, into equal bins of [t0, t1).

    Each bin's parts are added by `math.fsum` (exactly rounded), so the answer does not
    depend on the order the blocks come in: DuckDB returns a scan of several row groups
    filtered by a lane list in any order, and a plain float sum would change in its last
    digits from one request to the next."""
    width = (t1 - t0) / bins
    parts: list[list[float]] = [[] for _ in range(bins)]
    for start, end, busy in rows:
        if end <= start:
            continue
        density = busy / (end - start)
        first = max(0, int((start - t0) / width))
        last = min(bins - 1, int((end - t0) / width))
        for i in range(first, last + 1):
            lo, hi = max(start, t0 + i * width), min(end, t0 + (i + 1) * width)
            if hi > lo:
                parts[i].append((hi - lo) * density)
    return [math.fsum(p) for p in parts]
