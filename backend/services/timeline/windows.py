"""Timeline windows at the right level of detail (the utilisation overview: `utilization`).

A window query never scans all of a trace's events. It picks a pyramid level from the
bound "at most T / width + 2 blocks per lane", then walks down while the coarser level's
`children` sums (an upper bound on the next level's block count, computed by an
aggregate over at most a few thousand index entries) still fit `max_items`. Only at
level 1, when the window's event count (the blocks' `events`) fits, are raw events read
from the trace's dataset: a (kind, start_ns) range with a `LONG_NS` look-back plus the
long events of `timeline_spans`. If that still returns more than `max_items`, the
level-1 blocks are returned instead, so the limit always holds.

Public surface: `get_window`, `get_lanes`, `ready_trace`, `list_lanes`, `lane_keys`,
`choose_lanes`, `check_range`, `overlap`, `DEFAULT_MAX_ITEMS`.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import and_, or_, select
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import Session, col

from backend.models.timeline import (
    INT64_MAX,
    LanePublic,
    TimelineItem,
    TimelineLane,
    TimelineLanes,
    TimelineSpan,
    TimelineWindow,
    table_of,
)
from backend.models.traces import Trace, TraceStatus
from backend.services.datasets import MIX_COLUMNS, query_events
from backend.services.errors import InvalidInputError
from backend.services.timeline import lanes as lanes_mod
from backend.services.timeline.lanes import DEVICE, FAMILY_KINDS, LaneKey
from backend.services.timeline.pyramid import LONG_NS, length_class, level_width, lookback
from backend.services.traces import get_trace

DEFAULT_MAX_ITEMS = 5000
SCAN_FACTOR = 4  # index entries a query may read per returned item, at most
_RAW_COLUMNS = "id, kind, name, start_ns, dur_ns, rank, device, stream, pid, tid, args"
HOVER_ARGS = (
    "grid", "block", "bytes", "memory bandwidth (GB/s)", "registers per thread",
    "shared memory", "est. achieved occupancy %", "queue", "Collective name",
)  # fmt: skip
_S = table_of(TimelineSpan).c
_MIX = ", ".join(MIX_COLUMNS)
_MIXED = frozenset({lanes_mod.GPU, DEVICE})  # lanes whose blocks carry a category mix


@dataclass(slots=True)
class Item:
    """One drawable item of a window (a raw event, or a merged block with `id` None).

    A plain slotted class: building a pydantic model per item was half of a 3,000-event
    window's time; `TimelineItem`s are made from these only for the JSON window."""

    lane: int
    start_ns: int
    dur_ns: int
    name: str
    category: str
    busy_ns: int
    count: int = 1
    id: int | None = None
    depth: int = 0
    args: dict[str, Any] | None = None
    mix: list[int] | None = None


@dataclass(slots=True)
class Window:
    """A window's answer before it is shaped for the JSON API or as columns."""

    trace_id: str
    start_ns: int
    end_ns: int
    trace_start_ns: int
    trace_end_ns: int
    level: int | None
    estimated_events: int
    truncated: bool
    max_items: int
    lanes: list[TimelineLane]
    items: list[Item]

    @property
    def mode(self) -> str:
        return "events" if self.level is None else "blocks"

    @property
    def merge_gap_ns(self) -> int | None:
        return None if self.level is None else level_width(self.level)


@dataclass(slots=True)
class _Agg:
    blocks: int = 0
    children: int = 0
    events: int = 0


def ready_trace(session: Session, trace_id: str) -> Trace:
    """The trace, which must be ready (its index exists only then)."""
    trace = get_trace(session=session, trace_id=trace_id)
    if trace.status != TraceStatus.READY:
        raise InvalidInputError(f"trace {trace_id} is {trace.status}, not ready")
    return trace


def list_lanes(session: Session, trace_id: str, *, hidden: bool = False) -> list[TimelineLane]:
    """The trace's lanes in display order (hidden per-device lanes only when asked)."""
    query = select(TimelineLane).where(col(TimelineLane.trace_id) == trace_id)
    query = query.where(col(TimelineLane.hidden) == hidden).order_by(col(TimelineLane.lane))
    return list(session.scalars(query).all())


def lane_keys(lanes: Sequence[TimelineLane]) -> dict[LaneKey, int]:
    """Lane identity -> lane id, to place raw events read from the dataset."""
    out = {}
    for lane in lanes:
        gpu = lane.family in lanes_mod.GPU_FAMILIES or lane.family == DEVICE
        a, b = (lane.device, lane.stream) if gpu else (lane.pid, lane.tid)
        out[LaneKey(lane.family, lane.rank, a, b)] = lane.lane
    return out


def overlap(
    table: Any, trace_id: str, ws: int, we: int, max_class: int, *extra: ColumnElement[bool]
) -> ColumnElement[bool]:
    """Rows of a binned table (blocks or spans) overlapping [ws, we): one range per bin."""
    ranges = [
        and_(
            table.trace_id == trace_id,
            *extra,
            table.dclass == c,
            table.start_ns >= ws - lookback(c),
            table.start_ns < we,
        )
        for c in range(max_class + 1)
    ]
    return and_(or_(*ranges), table.end_ns >= ws)


def get_window(
    *,
    session: Session,
    trace_id: str,
    start_ns: int | None = None,
    end_ns: int | None = None,
    max_items: int = DEFAULT_MAX_ITEMS,
    lanes: list[int] | None = None,
) -> TimelineWindow:
    """At most `max_items` drawable items for [start_ns, end_ns) of the chosen lanes, raw
    events with their `HOVER_ARGS` (`window_items` says what it raises)."""
    w = window_items(
        session=session, trace_id=trace_id, start_ns=start_ns, end_ns=end_ns,
        max_items=max_items, lanes=lanes, hover_args=True,
    )  # fmt: skip
    return TimelineWindow(
        trace_id=trace_id, start_ns=w.start_ns, end_ns=w.end_ns,
        trace_start_ns=w.trace_start_ns, trace_end_ns=w.trace_end_ns, mode=w.mode,
        level=w.level, merge_gap_ns=w.merge_gap_ns, max_items=max_items,
        estimated_events=w.estimated_events, truncated=w.truncated,
        lanes=[_lane_public(lane) for lane in w.lanes],
        items=[TimelineItem.model_construct(  # typed values from the dataset: no validation
            lane=i.lane, start_ns=i.start_ns, dur_ns=i.dur_ns, name=i.name,
            category=i.category, count=i.count, busy_ns=i.busy_ns, id=i.id, depth=i.depth,
            args=i.args, mix=i.mix) for i in w.items],
    )  # fmt: skip


def window_items(
    *,
    session: Session,
    trace_id: str,
    start_ns: int | None = None,
    end_ns: int | None = None,
    max_items: int = DEFAULT_MAX_ITEMS,
    lanes: list[int] | None = None,
    hover_args: bool = False,
) -> Window:
    """The window's items, raw events with their `HOVER_ARGS` only if `hover_args` (the
    canvas renderer asks for an event's args when it is clicked, not per window).

    Raises:
        NotFoundError: no such trace.
        InvalidInputError: the trace is not ready, the window is empty, or a lane is unknown.
    """
    trace = ready_trace(session, trace_id)
    all_lanes = list_lanes(session, trace_id)
    t0 = min((lane.first_ns for lane in all_lanes), default=trace.start_ns or 0)
    t1 = max((lane.last_ns for lane in all_lanes), default=t0)
    ws = t0 if start_ns is None else start_ns
    we = t1 if end_ns is None else end_ns
    if we <= ws:
        raise InvalidInputError(f"empty window: end_ns ({we}) must be after start_ns ({ws})")
    chosen = choose_lanes(all_lanes, lanes)
    w = _Window(session.connection(), trace, ws, we, max_items, all_lanes, chosen, t1 - t0)
    w.hover_args = hover_args
    items, level, estimate, truncated = w.items()
    return Window(
        trace_id=trace_id, start_ns=ws, end_ns=we, trace_start_ns=t0, trace_end_ns=t1,
        level=level, estimated_events=estimate, truncated=truncated, max_items=max_items,
        lanes=chosen, items=items,
    )  # fmt: skip


def get_lanes(*, session: Session, trace_id: str) -> TimelineLanes:
    """The trace's drawable lanes and its time range: what a client lays its tracks out
    from before asking for any window."""
    trace = ready_trace(session, trace_id)
    lanes = list_lanes(session, trace_id)
    t0 = min((lane.first_ns for lane in lanes), default=trace.start_ns or 0)
    t1 = max((lane.last_ns for lane in lanes), default=t0)
    return TimelineLanes(
        trace_id=trace_id, trace_start_ns=t0, trace_end_ns=t1,
        lanes=[_lane_public(lane) for lane in lanes],
    )  # fmt: skip


def choose_lanes(all_lanes: list[TimelineLane], wanted: list[int] | None) -> list[TimelineLane]:
    """The lanes with the wanted ids (all of them for None), in id order.

    Raises:
        InvalidInputError: an id names no lane.
    """
    if wanted is None:
        return all_lanes
    by_id = {lane.lane: lane for lane in all_lanes}
    unknown = sorted(set(wanted) - set(by_id))
    if unknown:
        raise InvalidInputError(f"unknown lane ids {unknown}; the trace has 0..{len(by_id) - 1}")
    return [by_id[i] for i in sorted(set(wanted))]


def check_range(start_ns: int, end_ns: int) -> None:
    """Refuse an empty range, or one past what the dataset's int64 times can hold.

    Raises:
        InvalidInputError: end_ns <= start_ns, or a bound outside int64.

    >>> check_range(0, 1)
    """
    for name, value in (("start_ns", start_ns), ("end_ns", end_ns)):
        if not -INT64_MAX <= value <= INT64_MAX:
            raise InvalidInputError(f"{name} ({value}) is outside the int64 range of times")
    if end_ns <= start_ns:
        raise InvalidInputError(
            f"empty range: end_ns ({end_ns}) must be after start_ns ({start_ns})"
        )


def _lane_public(lane: TimelineLane) -> LanePublic:
    return LanePublic(
        lane=lane.lane, family=lane.family, group=lanes_mod.group_of(lane.family),
        label=lane.label, rank=lane.rank, device=lane.device, stream=lane.stream,
        pid=lane.pid, tid=lane.tid, events=lane.events, busy_ns=lane.busy_ns,
        max_depth=lane.max_depth,
    )  # fmt: skip


class _Window:
    """One window query: choose the level, then read blocks or raw events."""

    def __init__(
        self,
        conn: Connection,
        trace: Trace,
        ws: int,
        we: int,
        max_items: int,
        all_lanes: list[TimelineLane],
        chosen: list[TimelineLane],
        span: int,
    ) -> None:
        self.conn, self.trace, self.ws, self.we, self.n = conn, trace, ws, we, max_items
        self.trace_id = trace.id
        self.all_lanes, self.chosen = all_lanes, chosen
        self.ids = {lane.lane for lane in chosen}
        self.visible = len(all_lanes)
        self.levels = len(all_lanes[0].level_blocks) if all_lanes else 1
        self.max_class = length_class(max(span, 1))
        self.hover_args = True

    def items(self) -> tuple[list[Item], int | None, int, bool]:
        """(items, level or None for raw events, estimated events, truncated)."""
        if not self.chosen:
            return [], None, 0, False
        level = self._start_level()
        sums = self._level_sums()
        sel, tot = sums.get(level, (_Agg(), _Agg()))
        while level > 1 and sel.children <= self.n and tot.children <= SCAN_FACTOR * self.n:
            level -= 1
            sel, tot = sums.get(level, (_Agg(), _Agg()))
        if level == 1 and sel.children <= self.n and self._raw_scan_fits():
            raw = self._raw_items()
            if raw is not None:
                return raw, None, sel.events, False
        blocks, truncated = self._blocks(level)
        return blocks, level, sel.events, truncated

    def _start_level(self) -> int:
        """Finest level whose bound (T / width + 2 per lane, all lanes) fits the budget."""
        length = self.we - self.ws
        for level in range(1, self.levels + 1):
            if self.visible * (length // level_width(level) + 2) <= self.n:
                return level
        return self.levels

    def _level_sums(self) -> dict[int, tuple[_Agg, _Agg]]:
        """Per level, (selected lanes, all visible lanes) block, children and event sums in
        the window: one query for every level the walk down may visit."""
        sql = (
            "SELECT level, lane, count(*), sum(children), sum(events) FROM {blocks} "
            "WHERE start_ns < ? AND end_ns >= ? AND lane < ? GROUP BY level, lane"
        )
        sums: dict[int, tuple[_Agg, _Agg]] = {}
        for level, lane, blocks, children, events in query_events(
            self.trace, sql, [self.we, self.ws, self.visible]
        ):
            sel, tot = sums.setdefault(level, (_Agg(), _Agg()))
            for agg in (tot, sel) if lane in self.ids else (tot,):
                agg.blocks += blocks
                agg.children += int(children)
                agg.events += int(events)
        return sums

    def _families(self) -> set[str]:
        return {lane.family for lane in self.chosen}

    def _raw_scan_fits(self) -> bool:
        """The events range the raw path reads (all lanes of the same kinds, with the
        look-back) must stay within the scan budget too."""
        families = self._families()
        same = [lane.lane for lane in self.all_lanes if lane.family in families]
        sql = (
            "SELECT coalesce(sum(events), 0) FROM {blocks} WHERE level = 1 AND start_ns < ? "
            "AND end_ns >= ? AND lane IN (SELECT unnest(?))"
        )
        (scanned,) = query_events(self.trace, sql, [self.we, self.ws - LONG_NS, same])[0]
        return int(scanned) <= SCAN_FACTOR * self.n

    def _raw_items(self) -> list[Item] | None:
        kinds = [k for f in self._families() for k in FAMILY_KINDS.get(f, ())]
        long_ids = list(
            self.conn.execute(
                select(_S.event_id)
                .where(overlap(_S, self.trace_id, self.ws, self.we, self.max_class))
                .where(_S.lane.in_(self.ids))
            ).scalars()
        )
        columns = _RAW_COLUMNS if self.hover_args else _RAW_COLUMNS.replace(", args", ", NULL")
        sql = (
            f"SELECT {columns} FROM {{events}} WHERE kind IN (SELECT unnest(?)) "
            "AND start_ns >= ? AND start_ns < ? AND dur_ns <= ? AND start_ns + dur_ns >= ?"
        )
        params: list[Any] = [kinds, self.ws - LONG_NS, self.we, LONG_NS, self.ws]
        if long_ids:  # the long events overlapping the window, by id (they start before it)
            sql += (
                f" UNION ALL SELECT {columns} FROM {{events}} "
                "WHERE start_ns < ? AND id IN (SELECT unnest(?))"
            )
            params += [self.we, long_ids]
        keys = lane_keys(self.chosen)
        items: list[Item] = []
        for row in query_events(self.trace, sql, params):
            item = _raw_item(row, keys, self.hover_args)
            if item is not None:
                items.append(item)
                if len(items) > self.n:
                    return None
        _set_depths(items)
        return items

    def _blocks(self, level: int) -> tuple[list[Item], bool]:
        sql = (
            f"SELECT lane, start_ns, end_ns, events, busy_ns, top_name, {_MIX} FROM {{blocks}} "
            "WHERE level = ? AND start_ns < ? AND end_ns >= ? AND lane IN (SELECT unnest(?))"
        )
        params = [level, self.we, self.ws, sorted(self.ids)]
        families = {lane.lane: lane.family for lane in self.chosen}
        mixed = {lane.lane for lane in self.chosen if lane.family in _MIXED}
        items = [
            Item(
                lane=lane,
                start_ns=s,
                dur_ns=e - s,
                name=top,
                count=n,
                busy_ns=busy,
                category=lanes_mod.family_category(families[lane], top),
                # All zeros: a dataset indexed before the mix (or only 0-length events).
                mix=mix if lane in mixed and any(mix) else None,
            )
            for lane, s, e, n, busy, top, *mix in query_events(self.trace, sql, params)
        ]
        if len(items) <= self.n:
            return sorted(items, key=lambda i: (i.lane, i.start_ns)), False
        # Busiest first; ties by place, since DuckDB returns rows in no fixed order.
        items.sort(key=lambda i: (-i.busy_ns, i.lane, i.start_ns))
        return sorted(items[: self.n], key=lambda i: (i.lane, i.start_ns)), True


def _raw_item(row: Any, keys: dict[LaneKey, int], hover_args: bool) -> Item | None:
    id_, kind, name, start, dur, rank, device, stream, pid, tid, args = row
    key = lanes_mod.lane_key(kind, rank, device, stream, pid, tid)
    lane = keys.get(key) if key is not None else None
    if lane is None:
        return None
    shown = _hover_args(args) if args and hover_args else None
    return Item(
        lane, start, dur, name, lanes_mod.category(kind, name), dur, 1, id_, 0, shown or None
    )


def _hover_args(text: str) -> dict[str, Any] | None:
    """The stored args (JSON text) that a hover shows, or None."""
    args = orjson.loads(text)
    return {k: args[k] for k in HOVER_ARGS if k in args} if isinstance(args, dict) else None


def _set_depths(items: list[Item]) -> None:
    """Nesting depth per lane: every ancestor of an event in the window overlaps it too,
    so a stack over the window's events gives exact depths."""
    items.sort(key=lambda i: (i.lane, i.start_ns, -i.dur_ns, i.id or 0))  # ids: a fixed order
    lane, stack = -1, list[int]()
    for item in items:
        if item.lane != lane:
            lane, stack = item.lane, []
        while stack and stack[-1] <= item.start_ns:
            stack.pop()
        item.depth = len(stack)
        stack.append(item.start_ns + item.dur_ns)
