"""Counter tracks of a timeline window, in equal bins: GPU utilisation per device and the
caching allocator's allocated and reserved bytes per (rank, device).

Utilisation is the share of a bin the device runs any GPU work (`utilization.device_busy`
over the hidden device lanes). Memory comes from the `[memory]` events' `Total Allocated`
and `Total Reserved` (the totals after each allocation or free; `ingest.summary.memory`):
a bin holds the highest total sampled in it, or else the last total sampled before it (the
one in force), or None before the first sample. Host memory (`Device Type` 0, or a
negative `Device Id`) is left out, and so are 2021 traces, which carry no totals.

Public surface: `get_counters`.
"""

from collections import defaultdict
from typing import Any, Literal

from sqlmodel import Session

from backend.models.timeline import Counters, CounterTrack
from backend.models.traces import Trace
from backend.services.datasets import query_events
from backend.services.timeline.stored_lanes import list_lanes
from backend.services.timeline.utilization import device_busy, window_level
from backend.services.timeline.windows import check_range, ready_trace

_Kind = Literal["gpu_utilization", "memory_allocated", "memory_reserved"]
_TOTALS: dict[_Kind, str] = {
    "memory_allocated": "Total Allocated",
    "memory_reserved": "Total Reserved",
}
# Per track and bin (-1: before the window, `bins`: after it), the highest total and the
# last one (by start, then id). Every sample is read, so a track shows in every window.
_MEMORY = """
WITH m AS (
    SELECT rank, coalesce(device, TRY_CAST(args->>'$."Device Id"' AS INTEGER)) AS dev,
        TRY_CAST(args->>'$."Device Type"' AS INTEGER) AS dtype,
        TRY_CAST(args->>'$."{total}"' AS BIGINT) AS total, start_ns, id
    FROM {{events}} WHERE kind = 'memory'
)
SELECT rank, dev,
    CASE WHEN start_ns < ? THEN -1
        ELSE CAST(least((CAST(start_ns AS HUGEINT) - ?) * ? // ?, ?) AS BIGINT) END AS bin,
    max(total), arg_max(total, (start_ns, id))
FROM m WHERE total IS NOT NULL AND dev >= 0 AND dtype IS DISTINCT FROM 0
GROUP BY ALL
"""


def get_counters(
    *,
    session: Session,
    trace_id: str,
    start_ns: int | None = None,
    end_ns: int | None = None,
    bins: int = 400,
) -> Counters:
    """The window's counter tracks (the module's rules), `bins` values each.

    Args:
        session: database session.
        trace_id: the trace.
        start_ns: window start, absolute ns (default: the trace's first event).
        end_ns: window end, excluded (default: the trace's last event end).
        bins: number of equal bins.

    Raises:
        NotFoundError: no such trace.
        InvalidInputError: the trace is not ready, or the window is empty or past int64.
    """
    trace = ready_trace(session, trace_id)
    visible = list_lanes(session, trace_id)
    t0 = min((lane.first_ns for lane in visible), default=trace.start_ns or 0)
    ws = t0 if start_ns is None else start_ns
    we = max((lane.last_ns for lane in visible), default=t0) if end_ns is None else end_ns
    check_range(ws, we)
    devices = list_lanes(session, trace_id, hidden=True)
    tracks: dict[tuple[int, int], list[CounterTrack]] = defaultdict(list)
    if devices:
        level = window_level(trace, [*visible, *devices], ws, we)
        width = (we - ws) / bins
        busy = device_busy(trace, devices, level, ws, we, bins)
        for lane in devices:
            values: list[float | None] = [min(1.0, b / width) for b in busy[lane.lane]]
            tracks[_order(lane.rank, lane.device)].append(
                _track("gpu_utilization", lane.rank, lane.device, values)
            )
    for kind in _TOTALS:
        for (rank, device), values in _memory(trace, kind, ws, we, bins).items():
            tracks[_order(rank, device)].append(_track(kind, rank, device, values))
    ranks = {track.rank for group in tracks.values() for track in group}
    ordered = [track for key in sorted(tracks) for track in tracks[key]]
    if len(ranks) > 1:
        for track in ordered:
            track.label = f"rank {track.rank} · {track.label}"
    return Counters(trace_id=trace_id, start_ns=ws, end_ns=we, bins=bins, tracks=ordered)


def _order(rank: int | None, device: int | None) -> tuple[int, int]:
    return (-1 if rank is None else rank, -1 if device is None else device)


def _track(
    kind: _Kind, rank: int | None, device: int | None, values: list[float | None]
) -> CounterTrack:
    what = {"gpu_utilization": "utilization", "memory_allocated": "memory allocated",
            "memory_reserved": "memory reserved"}[kind]  # fmt: skip
    return CounterTrack(
        key=f"{kind}:{'' if rank is None else rank}:{device}", label=f"GPU {device} · {what}",
        kind=kind, unit="fraction" if kind == "gpu_utilization" else "bytes",
        rank=rank, device=device, values=values,
    )  # fmt: skip


def _memory(
    trace: Trace, kind: _Kind, ws: int, we: int, bins: int
) -> dict[tuple[int | None, int], list[float | None]]:
    """Per (rank, device), the bins' values of one allocator total (the module's rule)."""
    sql = _MEMORY.format(total=_TOTALS[kind])
    cells: dict[tuple[int | None, int], dict[int, tuple[Any, Any]]] = defaultdict(dict)
    for rank, device, bin_, high, last in query_events(trace, sql, [ws, ws, bins, we - ws, bins]):
        cells[(rank, device)][bin_] = (high, last)
    out = {}
    for key, by_bin in cells.items():
        carried = by_bin[-1][1] if -1 in by_bin else None
        values: list[float | None] = []
        for i in range(bins):
            if i in by_bin:
                high, carried = by_bin[i]
                values.append(float(high))
            else:
                values.append(None if carried is None else float(carried))
        out[key] = values
    return out
