"""The level-of-detail pyramid: a lane's busy intervals merged at widths growing 8x.

Level 1 merges a lane's events (sorted by start) into the union of their intervals, also
joining neighbours closer than 8 µs; level L joins level L-1 blocks closer than
8 µs · 8^(L-1). Every level-L block is therefore a run of whole level-(L-1) blocks, so
`children` (how many it holds) bounds the block count one level down, and between two
blocks of a level there is always at least that level's width of idle time: a window of
length T holds at most T / width + 2 blocks per lane.

`dclass` bins a block (or a long event) by length so that "what overlaps [ws, we)" is a
few index ranges `start in [ws - lookback(c), we)`, never a scan from the trace start.

Public surface: `Block`, `level_width`, `level_count`, `length_class`, `lookback`,
`LONG_NS`, `first_level`, `next_level`.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

BASE_WIDTH_NS = 8_000
FACTOR = 8
# Events at most this long are found on events(trace_id, kind, start_ns) with this look-back;
# longer ones are listed in timeline_spans.
LONG_NS = 250_000


@dataclass(slots=True)
class Block:
    """A merged busy interval of one lane at one level."""

    start: int
    end: int
    events: int
    busy: int
    children: int
    top: str
    first: int = 0  # index of its first event in the lane's sorted list (level 1 only)


def level_width(level: int) -> int:
    """Gaps shorter than this are merged at `level` (1 = 8 µs).

    >>> level_width(1), level_width(3)
    (8000, 512000)
    """
    return int(BASE_WIDTH_NS * FACTOR ** (level - 1))


def level_count(span_ns: int) -> int:
    """Levels needed until one level's width covers the whole trace.

    >>> level_count(0), level_count(8_000), level_count(10**9)
    (1, 1, 7)
    """
    levels = 1
    while level_width(levels) < span_ns:
        levels += 1
    return levels


def length_class(length: int) -> int:
    """Bin of an interval length: 0 up to `LONG_NS`, then one bin per factor of 8.

    >>> length_class(0), length_class(LONG_NS), length_class(LONG_NS + 1)
    (0, 0, 1)
    """
    c = 0
    while lookback(c) < length:
        c += 1
    return c


def lookback(dclass: int) -> int:
    """The longest interval in bin `dclass`: how far before a window its start can be."""
    return int(LONG_NS * FACTOR**dclass)


def first_level(events: Sequence[tuple[int, int, str, int, int | None]]) -> list[Block]:
    """Level 1 from a lane's events `(start, end, name, id, correlation)` sorted by start.

    Busy time is the union of the intervals (nested or overlapping events count once);
    the dominant name is the one with the most summed duration in the block (the first
    seen among equals). This loop runs once per event of the trace, so the open block lives
    in local variables and a block's per-name weights get a dict only once a second name
    joins it (most blocks hold one name).
    """
    gap = level_width(1)
    blocks: list[Block] = []
    weights: dict[str, int] | None = None
    opened = False
    first = cur_start = cur_end = count = busy = weight = 0
    top = ""
    for i, (start, end, name, _id, _corr) in enumerate(events):
        if opened and start - cur_end < gap:
            if end > cur_end:
                busy += end - (start if start > cur_end else cur_end)
                cur_end = end
            count += 1
            if weights is None:
                if name == top:
                    weight += end - start
                    continue
                weights = {top: weight}
            weights[name] = weights.get(name, 0) + end - start
            continue
        if opened:
            if weights is not None:
                top = max(weights, key=weights.__getitem__)
            blocks.append(Block(cur_start, cur_end, count, busy, count, top, first))
        opened, first, cur_start, cur_end, count, busy = True, i, start, end, 1, end - start
        top, weight, weights = name, end - start, None
    if opened:
        if weights is not None:
            top = max(weights, key=weights.__getitem__)
        blocks.append(Block(cur_start, cur_end, count, busy, count, top, first))
    return blocks


def next_level(blocks: Iterable[Block], level: int) -> list[Block]:
    """Level `level` from the blocks of `level - 1` (sorted, disjoint).

    The dominant name is the children's dominant names weighted by their busy time, an
    approximation that keeps this pass linear in the number of blocks.
    """
    gap = level_width(level)
    out: list[Block] = []
    weights: dict[str, int] | None = None
    cur: Block | None = None
    weight = 0
    for b in blocks:
        if cur is not None and b.start - cur.end < gap:
            if b.end > cur.end:
                cur.end = b.end
            cur.busy += b.busy
            cur.events += b.events
            cur.children += 1
            if weights is None:
                if b.top == cur.top:
                    weight += b.busy
                    continue
                weights = {cur.top: weight}
            weights[b.top] = weights.get(b.top, 0) + b.busy
            continue
        if cur is not None:
            if weights is not None:
                cur.top = max(weights, key=weights.__getitem__)
            out.append(cur)
        cur = Block(b.start, b.end, b.events, b.busy, 1, b.top)
        weight, weights = b.busy, None
    if cur is not None:
        if weights is not None:
            cur.top = max(weights, key=weights.__getitem__)
        out.append(cur)
    return out
