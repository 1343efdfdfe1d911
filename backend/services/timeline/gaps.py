"""Idle gaps on GPU lanes and what the CPU was doing during each (HTA's idle-time idea).

Rule (quoted by the API as `GapsPublic.rule`): for a gap [gs, ge) on a GPU lane of at
least `MIN_GAP_NS`, take the event that ends it and its CPU launch R (the runtime call
with the same correlation id, on the same rank). Then, looking at R's thread during
[gs, min(ge, R.end)):
- `sync-bound`: R had already returned before gs (the work was queued but waited on a
  dependency: an event, another stream, a collective), or the thread spent at least half
  of that time inside synchronising calls (`*Synchronize`, `StreamWaitEvent`, queries);
- `launch-bound`: the thread spent at least half of it inside runtime calls (launch and
  API overhead, including a slow launch call itself);
- `host-bound`: otherwise: the CPU was busy with other work (Python, operators, data
  loading) and issued the launch late;
- `unknown`: no launch was recorded for that event.

Public surface: `Coverage`, `Gap`, `find_gaps`, `RULE`, `MIN_GAP_NS`.
"""

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate, pairwise
from operator import sub

from backend.services.timeline.pyramid import Block

MIN_GAP_NS = 10_000
RULE = (
    "A gap is idle time of at least 10 µs on a GPU stream. Its cause comes from the CPU "
    "launch R of the event that ends it: sync-bound if R returned before the gap began "
    "(the GPU waited on a dependency) or R's thread spent >= 50% of the gap in "
    "synchronising calls; launch-bound if the thread spent >= 50% of it in runtime calls; "
    "host-bound otherwise (the CPU was busy elsewhere and launched late); unknown without R."
)


class Coverage:
    """Union of one thread's intervals, answering "how much of [a, b) is covered" in log time."""

    def __init__(self, intervals: Sequence[tuple[int, int]]) -> None:
        starts: list[int] = []
        ends: list[int] = []
        opened = False
        cur_start = cur_end = 0
        for start, end in sorted(intervals):
            if opened and start <= cur_end:
                if end > cur_end:
                    cur_end = end
                continue
            if opened:
                starts.append(cur_start)
                ends.append(cur_end)
            opened, cur_start, cur_end = True, start, end
        if opened:
            starts.append(cur_start)
            ends.append(cur_end)
        self.starts, self.ends = starts, ends
        self.prefix: list[int] = [0, *accumulate(map(sub, ends, starts))]

    def covered(self, a: int, b: int) -> int:
        """Nanoseconds of [a, b) inside the union.

        >>> Coverage([(0, 10), (5, 20), (30, 40)]).covered(15, 35)
        10
        """
        if b <= a or not self.starts:
            return 0
        lo = bisect_right(self.ends, a)
        hi = bisect_left(self.starts, b)
        if lo >= hi:
            return 0
        total = self.prefix[hi] - self.prefix[lo]
        total -= max(0, a - self.starts[lo])
        total -= max(0, self.ends[hi - 1] - b)
        return total


@dataclass(slots=True)
class Launch:
    """The CPU side of a GPU event: the runtime call and its thread."""

    id: int
    start: int
    end: int
    thread: tuple[int | None, int | None, int | None]


@dataclass(slots=True)
class Gap:
    start: int
    dur: int
    cause: str
    next_event_id: int | None
    launch_event_id: int | None
    cpu_runtime_ns: int
    cpu_sync_ns: int


def find_gaps(
    blocks: Iterable[Block],
    rank: int | None,
    launches: Mapping[tuple[int | None, int], Launch],
    runtime: dict[tuple[int | None, int | None, int | None], Coverage],
    sync: dict[tuple[int | None, int | None, int | None], Coverage],
) -> Iterator[Gap]:
    """Gaps between a GPU lane's level-1 blocks (in order; read once), each with its cause
    (see module rule)."""
    for prev, nxt in pairwise(blocks):
        gs, ge = prev.end, nxt.start
        if ge - gs < MIN_GAP_NS:
            continue
        event_id, corr = nxt.first_id, nxt.first_corr
        launch = launches.get((rank, corr)) if corr is not None else None
        yield _classify(gs, ge, event_id, launch, runtime, sync)


def _classify(
    gs: int,
    ge: int,
    event_id: int,
    launch: Launch | None,
    runtime: dict[tuple[int | None, int | None, int | None], Coverage],
    sync: dict[tuple[int | None, int | None, int | None], Coverage],
) -> Gap:
    if launch is None:
        return Gap(gs, ge - gs, "unknown", event_id, None, 0, 0)
    end = min(ge, launch.end)
    rt = runtime[launch.thread].covered(gs, end) if launch.thread in runtime else 0
    sy = sync[launch.thread].covered(gs, end) if launch.thread in sync else 0
    span = end - gs
    if launch.end <= gs or (span > 0 and 2 * sy >= span):
        cause = "sync-bound"
    elif span > 0 and 2 * rt >= span:
        cause = "launch-bound"
    else:
        cause = "host-bound"
    return Gap(gs, ge - gs, cause, event_id, launch.id, rt, sy)
