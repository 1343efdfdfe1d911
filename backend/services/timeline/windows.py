"""Timeline windows at the right level of detail (the utilisation overview: `utilization`).

A window query never scans all of a trace's events. It picks a pyramid level from the
bound "at most T / width + 2 blocks per lane", then walks down while the coarser level's
`children` sums (an upper bound on the next level's block count: binary searches and
prefix sums of the pyramid in memory, `block_index`) still fit `max_items`. Only at
level 1, when the window's event count (the blocks' `events`) fits, are raw events read
from the trace's dataset: a (kind, start_ns) range with a `LONG_NS` look-back, plus the
dataset's long events kept in memory (`long_events`). If that still returns more than
`max_items`, the level-1 blocks are returned instead, so the limit always holds. Nothing
per request is proportional to the trace: lanes, pyramid and long events are read once
per dataset (datasets never change), and the one Parquet scan skips row groups by their
statistics.

Public surface: `get_window`, `get_lanes`, `ready_trace`, `list_lanes`, `lane_keys`,
`choose_lanes`, `check_range`, `DEFAULT_MAX_ITEMS`.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
from sqlalchemy.orm import defer
from sqlmodel import Session

from backend.models.timeline import (
    INT64_MAX,
    LanePublic,
    TimelineItem,
    TimelineLane,
    TimelineLanes,
    TimelineWindow,
)
from backend.models.traces import Trace, TraceStatus
from backend.services.datasets import query_events
from backend.services.errors import InvalidInputError, NotFoundError
from backend.services.timeline import lanes as lanes_mod
from backend.services.timeline.block_index import BlockIndex, block_index
from backend.services.timeline.lanes import DEVICE, FAMILY_KINDS, LaneKey
from backend.services.timeline.long_events import RAW_COLUMNS, long_events
from backend.services.timeline.pyramid import LONG_NS, level_width
from backend.services.timeline.stored_lanes import list_lanes

DEFAULT_MAX_ITEMS = 5000
SCAN_FACTOR = 4  # index entries a query may read per returned item, at most
HOVER_ARGS = (
    "grid", "block", "bytes", "memory bandwidth (GB/s)", "registers per thread",
    "shared memory", "est. achieved occupancy %", "queue", "Collective name",
)  # fmt: skip
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


# Loaded only when read: an 8-rank job's summary is 700 KB of JSON, decoded per request.
_HEAVY = ("summary", "devices", "trace_metadata", "warnings", "progress")


def ready_trace(session: Session, trace_id: str, *, light: bool = False) -> Trace:
    """The trace, which must be ready (its index exists only then). With `light`, its
    large JSON columns are left unread until read (only for a caller that is done with
    the trace before its session closes: a window).

    Raises:
        NotFoundError: no such trace.
        InvalidInputError: it is not ready.
    """
    options = [defer(getattr(Trace, name)) for name in _HEAVY] if light else []
    trace = session.get(Trace, trace_id, options=options)
    if trace is None:
        raise NotFoundError(f"trace {trace_id} not found")
    if trace.status != TraceStatus.READY:
        raise InvalidInputError(f"trace {trace_id} is {trace.status}, not ready")
    return trace


def lane_keys(lanes: Sequence[TimelineLane]) -> dict[LaneKey, int]:
    """Lane identity -> lane id, to place raw events read from the dataset."""
    out = {}
    for lane in lanes:
        gpu = lane.family in lanes_mod.GPU_FAMILIES or lane.family == DEVICE
        a, b = (lane.device, lane.stream) if gpu else (lane.pid, lane.tid)
        out[LaneKey(lane.family, lane.rank, a, b)] = lane.lane
    return out


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
    trace = ready_trace(session, trace_id, light=True)
    all_lanes = list_lanes(session, trace_id)
    t0 = min((lane.first_ns for lane in all_lanes), default=trace.start_ns or 0)
    t1 = max((lane.last_ns for lane in all_lanes), default=t0)
    ws = t0 if start_ns is None else start_ns
    we = t1 if end_ns is None else end_ns
    if we <= ws:
        raise InvalidInputError(f"empty window: end_ns ({we}) must be after start_ns ({ws})")
    chosen = choose_lanes(all_lanes, lanes)
    w = _Window(trace, ws, we, max_items, all_lanes, chosen)
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
        trace: Trace,
        ws: int,
        we: int,
        max_items: int,
        all_lanes: list[TimelineLane],
        chosen: list[TimelineLane],
    ) -> None:
        self.trace, self.ws, self.we, self.n = trace, ws, we, max_items
        self.all_lanes, self.chosen = all_lanes, chosen
        self.ids = {lane.lane for lane in chosen}
        self.visible = len(all_lanes)
        self.levels = len(all_lanes[0].level_blocks) if all_lanes else 1
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
        the window, for every level the walk down may visit: one search of the index."""
        index = self._index()
        lanes = np.arange(self.visible, dtype=np.int64)
        levels = np.repeat(np.arange(1, self.levels + 1, dtype=np.int64), self.visible)
        lanes = np.tile(lanes, self.levels)
        blocks, children, events = index.sums(*index.ranges(levels, lanes, self.ws, self.we))
        chosen = np.isin(lanes, np.fromiter(self.ids, np.int64, len(self.ids)))
        sums: dict[int, tuple[_Agg, _Agg]] = {}
        for level in range(1, self.levels + 1):
            at = levels == level
            sel, tot = at & chosen, at
            sums[level] = (
                _Agg(int(blocks[sel].sum()), int(children[sel].sum()), int(events[sel].sum())),
                _Agg(int(blocks[tot].sum()), int(children[tot].sum()), int(events[tot].sum())),
            )
        return sums

    def _index(self) -> BlockIndex:
        return block_index(self.trace)

    def _families(self) -> set[str]:
        return {lane.family for lane in self.chosen}

    def _raw_scan_fits(self) -> bool:
        """The events range the raw path reads (all lanes of the same kinds, with the
        look-back) must stay within the scan budget too."""
        families = self._families()
        same = [lane.lane for lane in self.all_lanes if lane.family in families]
        index = self._index()
        lanes = np.array(same, dtype=np.int64)
        ranges = index.ranges(np.ones_like(lanes), lanes, self.ws - LONG_NS, self.we)
        return int(index.sums(*ranges)[2].sum()) <= SCAN_FACTOR * self.n

    def _raw_items(self) -> list[Item] | None:
        kinds = sorted(k for f in self._families() for k in FAMILY_KINDS.get(f, ()))
        columns = RAW_COLUMNS if self.hover_args else RAW_COLUMNS.replace(", args", ", NULL")
        # Literal kinds (code constants), so DuckDB prunes row groups by their statistics.
        sql = (
            f"SELECT {columns} FROM {{events}} WHERE kind IN ({_quoted(kinds)}) "
            "AND start_ns >= ? AND start_ns < ? AND dur_ns <= ? AND start_ns + dur_ns >= ?"
        )
        params: list[Any] = [self.ws - LONG_NS, self.we, LONG_NS, self.ws]
        rows = query_events(self.trace, sql + self._rank_filter(), params)
        rows += long_events(self.trace).overlapping(self.ws, self.we, kinds)
        keys = lane_keys(self.chosen)
        items: list[Item] = []
        for row in rows:
            item = _raw_item(row, keys, self.hover_args)
            if item is not None:
                items.append(item)
                if len(items) > self.n:
                    return None
        _set_depths(items)
        return items

    def _rank_filter(self) -> str:
        """`AND rank IN (...)` where the chosen lanes are of some of the ranks only: a rank's
        rows were written in buffers of their own, whose row groups DuckDB then skips."""
        ranks = {lane.rank for lane in self.chosen}
        known = sorted(r for r in ranks if r is not None)
        if len(known) < len(ranks) or ranks == {lane.rank for lane in self.all_lanes}:
            return ""
        return f" AND rank IN ({', '.join(str(int(r)) for r in known)})"

    def _blocks(self, level: int) -> tuple[list[Item], bool]:
        index = self._index()
        lanes = np.array(sorted(self.ids), dtype=np.int64)
        rows = index.rows(*index.ranges(np.full_like(lanes, level), lanes, self.ws, self.we))
        families = {lane.lane: lane.family for lane in self.chosen}
        mixed = {lane.lane for lane in self.chosen if lane.family in _MIXED}
        names = index.names
        columns = (index.lane, index.start, index.end, index.events, index.busy, index.top)
        items = [
            Item(
                lane=lane,
                start_ns=s,
                dur_ns=e - s,
                name=names[top],
                count=n,
                busy_ns=busy,
                category=lanes_mod.family_category(families[lane], names[top]),
                # All zeros: a dataset indexed before the mix (or only 0-length events).
                mix=mix if lane in mixed and any(mix) else None,
            )
            for lane, s, e, n, busy, top, *mix in zip(
                *(c[rows].tolist() for c in (*columns, *index.mix)), strict=True
            )
        ]
        # Rows come by lane, then start (the index's order).
        if len(items) <= self.n:
            return items, False
        items.sort(key=lambda i: (-i.busy_ns, i.lane, i.start_ns))  # busiest first; ties by place
        return sorted(items[: self.n], key=lambda i: (i.lane, i.start_ns)), True


def _quoted(words: Sequence[str]) -> str:
    """SQL string literals of code constants (event kinds), never of user input.

    >>> _quoted(["kernel", "memcpy"])
    "'kernel', 'memcpy'"
    """
    return ", ".join("'" + w.replace("'", "''") + "'" for w in words)


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
