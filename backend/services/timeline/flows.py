"""Flow arrows of one event, for the browser timeline: CPU launch -> GPU work, and a
collective's kernel -> the same collective on the other ranks.

Launches follow `launch`'s rule (correlation id, rank, process; the latest call at or
before the GPU work), in both directions, so an arrow drawn from a kernel and one drawn
from its runtime call are the same arrow.

Collectives are paired by name and ordinal: the peer of the n-th kernel named N on rank r
is the n-th kernel named N (by start, then id) on each other rank. NCCL kernel names carry
the collective, reduction, type and algorithm (`ncclDevKernel_AllReduce_Sum_bf16_RING_LL`),
so this holds for data-parallel jobs whose ranks run one process group and were profiled
over the same steps. It pairs the wrong kernels when ranks were profiled over different
steps or one rank lost events, and it cannot tell apart several process groups (tensor,
pipeline, data parallel) that run the same collective kernel, or point-to-point sends
whose peer is one rank rather than all.

Public surface: `get_event_flows`.
"""

from typing import Any, Literal, NamedTuple

from sqlmodel import Session

from backend.models.timeline import EventFlows, Flow
from backend.models.traces import Trace
from backend.services.datasets import query_events
from backend.services.errors import NotFoundError
from backend.services.timeline import lanes as lanes_mod
from backend.services.timeline.lanes import ANNOTATION, CPU, GPU, LaneKey
from backend.services.timeline.launch import (
    GPU_WORK,
    LAUNCHED_BY,
    EventRow,
    find_launch,
    one_event,
)
from backend.services.timeline.stored_lanes import list_lanes
from backend.services.timeline.windows import lane_keys, ready_trace
from ingest.classify import is_communication_name

_END = "{a}.id, {a}.kind, {a}.rank, {a}.device, {a}.stream, {a}.pid, {a}.tid, {a}.start_ns"


class _End(NamedTuple):
    """One end of a flow: the event's id, what places it in a lane, and its start."""

    id: int
    kind: str
    rank: int | None
    device: int | None
    stream: int | None
    pid: int | None
    tid: int | None
    start_ns: int


_Kind = Literal["launch", "collective"]
_Pair = tuple[_Kind, _End, _End]  # kind, from, to


def get_event_flows(
    *, session: Session, trace_id: str, event_id: int, limit: int = 500
) -> EventFlows:
    """The flows that start or end at an event (the module's rules).

    A GPU event gets the launch from its runtime call, and, for a communication kernel of
    a multi-rank trace, collective flows to its peers; a runtime call gets a launch to each
    GPU event it launched; a cpu_op, python or annotation event gets the launches of the
    runtime calls on its thread inside it. Other kinds have none.

    Args:
        session: database session.
        trace_id: the trace.
        event_id: the event (`id` in the trace's events).
        limit: most flows returned; `truncated` says when there were more.

    Raises:
        NotFoundError: no such trace, or no such event in it.
        InvalidInputError: the trace is not ready.
    """
    trace = ready_trace(session, trace_id)
    row = one_event(trace, "id = ?", [event_id])
    if row is None:
        raise NotFoundError(f"event {event_id} not found in trace {trace_id}")
    family = lanes_mod.KIND_FAMILY.get(row.kind)
    pairs: list[_Pair] = []
    if family == GPU:
        call = find_launch(trace, row)
        if call is not None:
            pairs.append(("launch", _end(call), _end(row)))
        pairs += _peers(trace, row, limit + 1 - len(pairs))
    elif row.kind == "runtime":
        pairs = _launched(trace, "c.id = ?", [row.id], limit + 1)
    elif family in (CPU, ANNOTATION):
        inside = (
            "c.rank IS NOT DISTINCT FROM ? AND c.pid IS NOT DISTINCT FROM ? "
            "AND c.tid IS NOT DISTINCT FROM ? AND c.start_ns >= ? AND c.start_ns + c.dur_ns <= ?"
        )
        params = [row.rank, row.pid, row.tid, row.start_ns, row.start_ns + row.dur_ns]
        pairs = _launched(trace, inside, params, limit + 1)
    keys = lane_keys(list_lanes(session, trace_id))
    items = [_flow(kind, a, b, keys) for kind, a, b in pairs[:limit]]
    return EventFlows(
        trace_id=trace_id, event_id=event_id, items=items, truncated=len(pairs) > limit
    )


def _end(row: EventRow) -> _End:
    return _End(row.id, row.kind, row.rank, row.device, row.stream, row.pid, row.tid,
                row.start_ns)  # fmt: skip


def _launched(trace: Trace, calls: str, params: list[Any], limit: int) -> list[_Pair]:
    """Launch pairs of the runtime calls `c` matching `calls`, in call then GPU order."""
    sql = (
        f"SELECT {_END.format(a='c')}, {_END.format(a='g')} "
        f"FROM {{events}} AS c JOIN {{events}} AS g ON {LAUNCHED_BY} "
        f"WHERE g.kind IN (SELECT unnest(?)) AND {calls} "
        "ORDER BY c.start_ns, c.id, g.start_ns, g.id LIMIT ?"
    )
    rows = query_events(trace, sql, [list(GPU_WORK), *params, limit])
    return [("launch", _End(*r[:8]), _End(*r[8:])) for r in rows]


def _peers(trace: Trace, row: EventRow, limit: int) -> list[_Pair]:
    """Collective pairs from a communication kernel to its peers on the other ranks."""
    if row.kind != "kernel" or row.rank is None or limit <= 0:
        return []
    if not is_communication_name(row.name):
        return []
    sql = (
        "WITH k AS (SELECT id, kind, rank, device, stream, pid, tid, start_ns, "
        "row_number() OVER (PARTITION BY rank ORDER BY start_ns, id) AS n "
        "FROM {events} WHERE kind = 'kernel' AND name = ? AND rank IS NOT NULL) "
        f"SELECT {_END.format(a='k')} FROM k "
        "WHERE k.rank <> ? AND k.n = (SELECT n FROM k WHERE id = ?) ORDER BY k.rank, k.id LIMIT ?"
    )
    rows = query_events(trace, sql, [row.name, row.rank, row.id, limit])
    return [("collective", _end(row), _End(*r)) for r in rows]


def _lane(end: _End, keys: dict[LaneKey, int]) -> int | None:
    key = lanes_mod.lane_key(end.kind, end.rank, end.device, end.stream, end.pid, end.tid)
    return keys.get(key) if key is not None else None


def _flow(kind: _Kind, a: _End, b: _End, keys: dict[LaneKey, int]) -> Flow:
    return Flow(
        kind=kind, from_id=a.id, from_lane=_lane(a, keys), from_ns=a.start_ns,
        to_id=b.id, to_lane=_lane(b, keys), to_ns=b.start_ns,
    )  # fmt: skip
