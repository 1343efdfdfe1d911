"""Timeline look-ups around single events: detail with CPU launch, search, gaps.

The CPU launch of a GPU event follows its correlation id to the runtime call, looking
back from the event's start in windows growing 16x (launch queues are usually well under
a millisecond deep), then takes the innermost CPU op on that thread around the call.

Public surface: `get_event_detail`, `search`, `list_gaps`. (Steps: `trace_steps`.)
"""

from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection
from sqlmodel import Session, col, func

from backend.models.events import TraceEvent
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
    TimelineGap,
    TimelineName,
    TimelineSpan,
    table_of,
)
from backend.services.errors import NotFoundError
from backend.services.timeline import lanes as lanes_mod
from backend.services.timeline.gaps import RULE
from backend.services.timeline.lanes import CPU, GPU_FAMILIES, LaneKey
from backend.services.timeline.pyramid import LONG_NS, length_class
from backend.services.timeline.windows import lane_keys, list_lanes, overlap, ready_trace

_EVENTS = table_of(TraceEvent)
_E = _EVENTS.c
_S = table_of(TimelineSpan).c
_LOOKBACKS = (1_000_000, 16_000_000, 256_000_000, 4_096_000_000)
_SEARCH_NAMES = 20


def _public(row: Any, keys: dict[LaneKey, int], labels: dict[int, str]) -> EventPublic:
    key = lanes_mod.lane_key(row.kind, row.rank, row.device, row.stream, row.pid, row.tid)
    lane = keys.get(key) if key is not None else None
    return EventPublic(
        id=row.id, kind=row.kind, name=row.name, start_ns=row.start_ns, dur_ns=row.dur_ns,
        rank=row.rank, device=row.device, stream=row.stream, pid=row.pid, tid=row.tid,
        correlation=row.correlation, args=row.args, lane=lane,
        lane_label=labels.get(lane) if lane is not None else None,
    )  # fmt: skip


def get_event_detail(*, session: Session, trace_id: str, event_id: int) -> EventDetail:
    """One event with its args, its CPU launch (runtime call, enclosing CPU op) and the
    stats row of its kernel.

    Raises:
        NotFoundError: no such trace, or no such event in it.
    """
    ready_trace(session, trace_id)
    conn = session.connection()
    row = conn.execute(select(_EVENTS).where(_E.id == event_id, _E.trace_id == trace_id)).first()
    if row is None:
        raise NotFoundError(f"event {event_id} not found in trace {trace_id}")
    lanes = list_lanes(session, trace_id)
    keys, labels = lane_keys(lanes), {lane.lane: lane.label for lane in lanes}
    runtime = cpu_op = None
    if lanes_mod.KIND_FAMILY.get(row.kind) in GPU_FAMILIES and row.correlation is not None:
        runtime = _find_launch(conn, trace_id, row)
    if runtime is not None or row.kind == "runtime":
        cpu_op = _enclosing_cpu_op(conn, trace_id, runtime or row, keys)
    return EventDetail(
        trace_id=trace_id,
        event=_public(row, keys, labels),
        runtime=_public(runtime, keys, labels) if runtime is not None else None,
        cpu_op=_public(cpu_op, keys, labels) if cpu_op is not None else None,
        kernel_stats=_kernel_stats(session, trace_id, row.name) if row.kind == "kernel" else None,
    )


def _find_launch(conn: Connection, trace_id: str, event: Any) -> Any:
    for back in (*_LOOKBACKS, None):
        query = select(_EVENTS).where(
            _E.trace_id == trace_id, _E.kind == "runtime", _E.correlation == event.correlation,
            _E.start_ns <= event.start_ns,
        )  # fmt: skip
        if event.rank is not None:
            query = query.where(_E.rank == event.rank)
        if back is not None:
            query = query.where(_E.start_ns >= event.start_ns - back)
        found = conn.execute(query.order_by(_E.start_ns.desc()).limit(1)).first()
        if found is not None or back is None:
            return found
    return None


def _enclosing_cpu_op(conn: Connection, trace_id: str, call: Any, keys: dict[LaneKey, int]) -> Any:
    """The innermost cpu_op on the call's thread that contains it."""
    same_thread = (_E.pid == call.pid, _E.tid == call.tid, _E.kind == "cpu_op")
    short = select(_EVENTS).where(
        _E.trace_id == trace_id, *same_thread, _E.start_ns <= call.start_ns,
        _E.start_ns >= call.start_ns - LONG_NS,
        _E.start_ns + _E.dur_ns >= call.start_ns + call.dur_ns,
    )  # fmt: skip
    candidates = list(conn.execute(short))
    lane = keys.get(LaneKey(CPU, call.rank, call.pid, call.tid))
    if lane is not None:
        end = call.start_ns + call.dur_ns
        span_class = length_class(10**15)
        long = (
            select(_EVENTS)
            .join(table_of(TimelineSpan), _S.event_id == _E.id)
            .where(overlap(_S, trace_id, call.start_ns, end, span_class))
            .where(_S.lane == lane, *same_thread, _E.start_ns <= call.start_ns)
            .where(_E.start_ns + _E.dur_ns >= end)
        )
        candidates.extend(conn.execute(long))
    return max(candidates, key=lambda r: (r.start_ns, -r.dur_ns), default=None)


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
    ready_trace(session, trace_id)
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
        lanes = list_lanes(session, trace_id)
        keys = lane_keys(lanes)
        lo = max(start_ns or 0, min(n.first_ns for n in names)) - LONG_NS
        hi = min(end_ns or 2**62, max(n.last_ns for n in names))
        rows = session.connection().execute(
            select(_E.id, _E.kind, _E.name, _E.start_ns, _E.dur_ns, _E.rank, _E.device,
                   _E.stream, _E.pid, _E.tid)
            .where(_E.trace_id == trace_id, _E.kind.in_({n.kind for n in names}))
            .where(_E.start_ns >= lo, _E.start_ns < hi)
            .where(_E.name.in_([n.name for n in names]))
            .where(_E.start_ns + _E.dur_ns >= (start_ns or 0))
            .order_by(_E.start_ns).limit(limit + 1)
        )  # fmt: skip
        for r in rows:
            key = lanes_mod.lane_key(r.kind, r.rank, r.device, r.stream, r.pid, r.tid)
            lane = keys.get(key) if key is not None else None
            matches.append(
                EventWindow(
                    id=r.id,
                    lane=lane,
                    name=r.name,
                    start_ns=r.start_ns,
                    end_ns=r.start_ns + r.dur_ns,
                )
            )
    items = [NameMatch(name=n.name, kind=n.kind, count=n.count, total_ns=n.total_ns) for n in names]
    return SearchResult(
        trace_id=trace_id, query=query, names=items, matches=matches[:limit],
        truncated=len(matches) > limit,
    )  # fmt: skip


def list_gaps(*, session: Session, trace_id: str, min_ns: int, limit: int) -> GapsPublic:
    """GPU idle gaps of at least `min_ns`, longest first, with their cause."""
    ready_trace(session, trace_id)
    where = (col(TimelineGap.trace_id) == trace_id, col(TimelineGap.dur_ns) >= min_ns)
    count_query = select(func.count()).select_from(TimelineGap).where(*where)
    count = int(session.execute(count_query).scalar_one())
    rows = session.scalars(
        select(TimelineGap).where(*where).order_by(col(TimelineGap.dur_ns).desc()).limit(limit)
    )
    labels = {lane.lane: lane.label for lane in list_lanes(session, trace_id)}
    items = [
        GapPublic(
            lane=g.lane,
            label=labels.get(g.lane, str(g.lane)),
            start_ns=g.start_ns,
            end_ns=g.start_ns + g.dur_ns,
            dur_ns=g.dur_ns,
            cause=g.cause,
            cpu_runtime_ns=g.cpu_runtime_ns,
            cpu_sync_ns=g.cpu_sync_ns,
            next_event_id=g.next_event_id,
            launch_event_id=g.launch_event_id,
        )
        for g in rows
    ]
    return GapsPublic(trace_id=trace_id, min_ns=min_ns, count=count, rule=RULE, items=items)
