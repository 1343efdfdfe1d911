"""Timeline look-ups around single events: detail with CPU launch, search, gaps.

Events are read from the trace's dataset. The CPU launch of a GPU event is the runtime
call `launch.find_launch` picks (its correlation id, same rank), then the innermost CPU op
on that thread around the call.

Public surface: `get_event_detail`, `search`, `list_gaps`. (Steps: `trace_steps`.)
"""

from typing import Any

import orjson
from sqlalchemy import select
from sqlmodel import Session, col, func

from backend.models.kernel_stats import KernelStatRecord
from backend.models.timeline import (
    EventDetail,
    EventPublic,
    EventWindow,
    GapPublic,
    GapsPublic,
    KernelStatsRow,
    NameMatch,
    SearchResult,
    TimelineName,
)
from backend.services.datasets import query_events
from backend.services.errors import NotFoundError
from backend.services.timeline import lanes as lanes_mod
from backend.services.timeline.gaps import RULE
from backend.services.timeline.lanes import GPU_FAMILIES, LaneKey
from backend.services.timeline.launch import enclosing_cpu_op, find_launch, one_event
from backend.services.timeline.pyramid import LONG_NS
from backend.services.timeline.stored_lanes import list_lanes
from backend.services.timeline.windows import lane_keys, ready_trace

_SEARCH_NAMES = 20


def _public(row: Any, keys: dict[LaneKey, int], labels: dict[int, str]) -> EventPublic:
    key = lanes_mod.lane_key(row.kind, row.rank, row.device, row.stream, row.pid, row.tid)
    lane = keys.get(key) if key is not None else None
    return EventPublic(
        id=row.id, kind=row.kind, name=row.name, start_ns=row.start_ns, dur_ns=row.dur_ns,
        rank=row.rank, device=row.device, stream=row.stream, pid=row.pid, tid=row.tid,
        correlation=row.correlation, args=orjson.loads(row.args) if row.args else None, lane=lane,
        lane_label=labels.get(lane) if lane is not None else None,
    )  # fmt: skip


def get_event_detail(*, session: Session, trace_id: str, event_id: int) -> EventDetail:
    """One event with its args, its CPU launch (runtime call, enclosing CPU op) and the
    stats row of its kernel.

    Raises:
        NotFoundError: no such trace, or no such event in it.
    """
    trace = ready_trace(session, trace_id)
    row = one_event(trace, "id = ?", [event_id])
    if row is None:
        raise NotFoundError(f"event {event_id} not found in trace {trace_id}")
    lanes = list_lanes(session, trace_id)
    keys, labels = lane_keys(lanes), {lane.lane: lane.label for lane in lanes}
    runtime = cpu_op = None
    if lanes_mod.KIND_FAMILY.get(row.kind) in GPU_FAMILIES and row.correlation is not None:
        runtime = find_launch(trace, row)
    if runtime is not None or row.kind == "runtime":
        cpu_op = enclosing_cpu_op(trace, runtime or row)
    return EventDetail(
        trace_id=trace_id,
        event=_public(row, keys, labels),
        runtime=_public(runtime, keys, labels) if runtime is not None else None,
        cpu_op=_public(cpu_op, keys, labels) if cpu_op is not None else None,
        kernel_stats=_kernel_stats(session, trace_id, row.name) if row.kind == "kernel" else None,
    )


def _kernel_stats(session: Session, trace_id: str, name: str) -> KernelStatsRow | None:
    row = session.scalars(
        select(KernelStatRecord).where(
            col(KernelStatRecord.trace_id) == trace_id, col(KernelStatRecord.name) == name
        )
    ).first()
    return None if row is None else KernelStatsRow.model_validate(row, from_attributes=True)


def search(
    *,
    session: Session,
    trace_id: str,
    query: str,
    start_ns: int | None = None,
    end_ns: int | None = None,
    limit: int = 200,
) -> SearchResult:
    """Names containing `query` (case-insensitive) and their first `limit` occurrences in
    the window, read in start order from each name's [first, last] range."""
    trace = ready_trace(session, trace_id)
    pattern = f"%{query.lower()}%"
    names = list(
        session.scalars(
            select(TimelineName)
            .where(col(TimelineName.trace_id) == trace_id)
            .where(func.lower(TimelineName.name).like(pattern))
            .order_by(col(TimelineName.total_ns).desc())
            .limit(_SEARCH_NAMES)
        )
    )
    matches: list[EventWindow] = []
    if names:
        keys = lane_keys(list_lanes(session, trace_id))
        lo = max(start_ns or 0, min(n.first_ns for n in names)) - LONG_NS
        hi = min(end_ns or 2**62, max(n.last_ns for n in names))
        sql = (
            "SELECT id, kind, name, start_ns, dur_ns, rank, device, stream, pid, tid "
            "FROM {events} WHERE kind IN (SELECT unnest(?)) AND start_ns >= ? AND start_ns < ? "
            "AND name IN (SELECT unnest(?)) AND start_ns + dur_ns >= ? "
            "ORDER BY start_ns, id LIMIT ?"
        )
        kinds, wanted = sorted({n.kind for n in names}), [n.name for n in names]
        params = [kinds, lo, hi, wanted, start_ns or 0, limit + 1]
        for id_, kind, name, start, dur, rank, device, stream, pid, tid in query_events(
            trace, sql, params
        ):
            key = lanes_mod.lane_key(kind, rank, device, stream, pid, tid)
            lane = keys.get(key) if key is not None else None
            matches.append(
                EventWindow(id=id_, lane=lane, name=name, start_ns=start, end_ns=start + dur)
            )
    items = [NameMatch(name=n.name, kind=n.kind, count=n.count, total_ns=n.total_ns) for n in names]
    return SearchResult(
        trace_id=trace_id, query=query, names=items, matches=matches[:limit],
        truncated=len(matches) > limit,
    )  # fmt: skip


def list_gaps(*, session: Session, trace_id: str, min_ns: int, limit: int) -> GapsPublic:
    """GPU idle gaps of at least `min_ns`, longest first, with their cause."""
    trace = ready_trace(session, trace_id)
    (count,) = query_events(trace, "SELECT count(*) FROM {gaps} WHERE dur_ns >= ?", [min_ns])[0]
    sql = (
        "SELECT lane, start_ns, dur_ns, cause, cpu_runtime_ns, cpu_sync_ns, next_event_id, "
        "launch_event_id FROM {gaps} WHERE dur_ns >= ? ORDER BY dur_ns DESC, lane, start_ns "
        "LIMIT ?"
    )
    labels = {lane.lane: lane.label for lane in list_lanes(session, trace_id)}
    items = [
        GapPublic(
            lane=lane,
            label=labels.get(lane, str(lane)),
            start_ns=start,
            end_ns=start + dur,
            dur_ns=dur,
            cause=cause,
            cpu_runtime_ns=runtime_ns,
            cpu_sync_ns=sync_ns,
            next_event_id=next_id,
            launch_event_id=launch_id,
        )
        for lane, start, dur, cause, runtime_ns, sync_ns, next_id, launch_id in query_events(
            trace, sql, [min_ns, limit]
        )
    ]
    return GapsPublic(trace_id=trace_id, min_ns=min_ns, count=count, rule=RULE, items=items)
