"""The level-of-detail pyramid: a lane's busy intervals merged at widths growing 8x.

Level 1 merges a lane's events (sorted by start) into the union of their intervals, also
joining neighbours closer than 8 µs; level L joins level L-1 blocks closer than
8 µs · 8^(L-1). Every level-L block is therefore a run of whole level-(L-1) blocks, so
`children` (how many it holds) bounds the block count one level down, and between two
blocks of a level there is always at least that level's width of idle time: a window of
length T holds at most T / width + 2 blocks per lane.

On GPU lanes (and the hidden device lanes) a block also carries its `mix`: the summed
durations of its events by category (`MIX_CATEGORIES`), so a block of 32 ms of compute and
45 ms of NCCL is drawn as both, not as its dominant name's colour. Level L sums its
children's.

`dclass` bins a block (or a long event) by length so that "what overlaps [ws, we)" is a
few index ranges `start in [ws - lookback(c), we)`, never a scan from the trace start.

Public surface: `Block`, `level_width`, `level_count`, `length_class`, `lookback`,
`LONG_NS`, `MIX_CATEGORIES`, `mix_index`, `first_level`, `pyramid`.
"""

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ingest.classify import is_communication_name

BASE_WIDTH_NS = 8_000
FACTOR = 8
# Events at most this long are found on events(trace_id, kind, start_ns) with this look-back;
# longer ones are listed in timeline_spans.
LONG_NS = 250_000
# The categories of a block's `mix`, in the order of its four numbers (and of the columns
# `compute_ns`, `communication_ns`, `memcpy_ns`, `memset_ns` in `blocks.parquet`).
MIX_CATEGORIES = ("compute", "communication", "memcpy", "memset")


@dataclass(slots=True)
class Block:
    """A merged busy interval of one lane at one level."""

    start: int
    end: int
    events: int
    busy: int
    children: int
    top: str
    # Level 1 only: the id and correlation of its first event (what ends the gap before it).
    first_id: int = 0
    first_corr: int | None = None
    # GPU and device lanes only: summed event durations by `MIX_CATEGORIES` (not a union:
    # overlapping events both count); None on other lanes.
    mix: list[int] | None = None


def mix_index(name: str) -> int:
    """Position of a GPU event's category in a block's `mix`, from its name alone (parsers
    name copies and sets as Kineto does: "Memcpy HtoD (...)", "Memset (Device)").

    >>> names = ("gemm", "ncclDevKernel_AllReduce", "Memcpy DtoH", "Memset (Device)")
    >>> [mix_index(n) for n in names]
    [0, 1, 2, 3]
    """
    if is_communication_name(name):
        return 1
    if name.startswith("Memcpy"):
        return 2
    return 3 if name.startswith("Memset") else 0


def _mix(top: str, weight: int, weights: dict[str, int] | None, cache: dict[str, int]) -> list[int]:
    """A closed block's mix from its per-name weights (or its one name's weight)."""
    mix = [0, 0, 0, 0]
    if weights is None:  # most blocks: one name
        i = cache.get(top)
        if i is None:
            i = cache[top] = mix_index(top)
        mix[i] = weight
        return mix
    for name, w in weights.items():
        i = cache.get(name)
        if i is None:
            i = cache[name] = mix_index(name)
        mix[i] += w
    return mix


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


def first_level(
    events: Iterable[tuple[int, int, str, int, int | None]], *, mixed: bool = False
) -> Iterator[Block]:
    """Level 1 from a lane's events `(start, end, name, id, correlation)` sorted by start,
    each block yielded once closed (the events are read once, so a lazy stream will do).
    With `mixed` (GPU and device lanes), each block gets its `mix`.

    Busy time is the union of the intervals (nested or overlapping events count once);
    the dominant name is the one with the most summed duration in the block (the first
    seen among equals). This loop runs once per event of the trace, so the open block lives
    in local variables and a block's per-name weights get a dict only once a second name
    joins it (most blocks hold one name). The mix is made from those weights when a block
    closes, each name's category looked up once per lane.
    """
    gap = level_width(1)
    cache: dict[str, int] = {}
    weights: dict[str, int] | None = None
    opened = False
    first_id = cur_start = cur_end = count = busy = weight = 0
    first_corr: int | None = None
    top = ""
    for start, end, name, event_id, corr in events:
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
            mix = _mix(top, weight, weights, cache) if mixed else None
            if weights is not None:
                top = max(weights, key=weights.__getitem__)
            yield Block(cur_start, cur_end, count, busy, count, top, first_id, first_corr, mix)
        opened, cur_start, cur_end, count, busy = True, start, end, 1, end - start
        first_id, first_corr = event_id, corr
        top, weight, weights = name, end - start, None
    if opened:
        mix = _mix(top, weight, weights, cache) if mixed else None
        if weights is not None:
            top = max(weights, key=weights.__getitem__)
        yield Block(cur_start, cur_end, count, busy, count, top, first_id, first_corr, mix)


class _LevelMerger:
    """Builds level `level` from the blocks of `level - 1` (sorted, disjoint), pushed one
    at a time; `push` and `flush` return a block once it is closed.

    The dominant name is the children's dominant names weighted by their busy time, an
    approximation that keeps this linear in the number of blocks. The mix is the sum of
    the children's (exact).
    """

    __slots__ = ("cur", "gap", "weight", "weights")

    def __init__(self, level: int) -> None:
        self.gap = level_width(level)
        self.cur: Block | None = None
        self.weights: dict[str, int] | None = None
        self.weight = 0

    def push(self, b: Block) -> Block | None:
        cur = self.cur
        if cur is not None and b.start - cur.end < self.gap:
            if b.end > cur.end:
                cur.end = b.end
            cur.busy += b.busy
            cur.events += b.events
            cur.children += 1
            mix, add = cur.mix, b.mix
            if mix is not None and add is not None:
                mix[0] += add[0]
                mix[1] += add[1]
                mix[2] += add[2]
                mix[3] += add[3]
            if self.weights is None:
                if b.top == cur.top:
                    self.weight += b.busy
                    return None
                self.weights = {cur.top: self.weight}
            self.weights[b.top] = self.weights.get(b.top, 0) + b.busy
            return None
        closed = self.flush()
        mix = None if b.mix is None else b.mix.copy()  # summed into in place: not the child's
        self.cur = Block(b.start, b.end, b.events, b.busy, 1, b.top, mix=mix)
        self.weight = b.busy
        return closed

    def flush(self) -> Block | None:
        cur, weights = self.cur, self.weights
        if cur is not None and weights is not None:
            cur.top = max(weights, key=weights.__getitem__)
        self.cur, self.weights = None, None
        return cur


def pyramid(
    events: Iterable[tuple[int, int, str, int, int | None]], levels: int, *, mixed: bool = False
) -> Iterator[tuple[int, Block]]:
    """Every block of levels 1..`levels` as `(level, block)`, each yielded as soon as it
    is closed: a lane's pyramid is never held whole, only one open block per level.
    `mixed` gives every block its `mix` (GPU and device lanes)."""
    mergers = {level: _LevelMerger(level) for level in range(2, levels + 1)}

    def cascade(level: int, block: Block) -> Iterator[tuple[int, Block]]:
        while True:
            yield level, block
            merger = mergers.get(level + 1)
            closed = merger.push(block) if merger is not None else None
            if closed is None:
                return
            level, block = level + 1, closed

    for block in first_level(events, mixed=mixed):
        yield from cascade(1, block)
    for level, merger in mergers.items():  # lowest first: a flush may close the next level
        closed = merger.flush()
        if closed is not None:
            yield from cascade(level, closed)
