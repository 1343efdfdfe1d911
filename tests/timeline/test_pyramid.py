"""Pure rules of the index: the pyramid's invariants, interval coverage, gap causes."""

from __future__ import annotations

import itertools
import random

from backend.services.timeline.gaps import Coverage, Launch, find_gaps
from backend.services.timeline.pyramid import Block, first_level, level_width, pyramid


def _events(seed: int, n: int) -> list[tuple[int, int, str, int, int | None]]:
    rng = random.Random(seed)
    t, out = 0, []
    for i in range(n):
        t += rng.choice([0, 500, 3_000, 9_000, 70_000, 600_000])
        dur = rng.choice([100, 2_000, 40_000, 300_000])
        out.append((t, t + dur, rng.choice("abc"), i, i))
    return sorted(out)


def _union(intervals: list[tuple[int, int]]) -> int:
    total, end = 0, -1
    for s, e in sorted(intervals):
        if s > end:
            total, end = total + e - s, e
        elif e > end:
            total, end = total + e - end, e
    return total


def test_every_level_keeps_busy_time_and_event_count_and_nests() -> None:
    events = _events(1, 3000)
    by_level: dict[int, list[Block]] = {}
    for level, block in pyramid(iter(events), 7):  # a one-pass stream, as the index gives
        by_level.setdefault(level, []).append(block)
    assert sorted(by_level) == list(range(1, 8))
    level = by_level[1]
    assert level == list(first_level(events))
    busy = _union([(s, e) for s, e, *_ in events])
    assert sum(b.busy for b in level) == busy
    assert sum(b.events for b in level) == len(events)
    second = events[level[0].events]  # the event that opens the second block
    assert [(b.first_id, b.first_corr) for b in level[:2]] == [events[0][3:], second[3:]]
    for n in range(2, 8):
        upper = by_level[n]
        assert sum(b.busy for b in upper) == busy
        assert sum(b.events for b in upper) == len(events)
        assert sum(b.children for b in upper) == len(level)
        gaps = [b.start - a.end for a, b in itertools.pairwise(upper)]
        assert all(g >= level_width(n) for g in gaps), "blocks are at least a width apart"
        for b in upper:  # each block is a run of whole blocks one level down
            inside = [c for c in level if b.start <= c.start and c.end <= b.end]
            assert len(inside) == b.children and inside[0].start == b.start
        level = upper


def test_coverage_counts_overlaps_once() -> None:
    cov = Coverage([(0, 10), (5, 20), (30, 40)])
    assert cov.covered(0, 100) == 30
    assert cov.covered(12, 32) == 10
    assert cov.covered(20, 30) == 0
    assert Coverage([]).covered(0, 5) == 0


def test_gap_causes() -> None:
    gpu = [(0, 10_000, "k", 1, 11), (100_000, 110_000, "k", 2, 12)]
    blocks = list(first_level(gpu))
    thread = (None, 1, 1)

    def cause(launch: Launch, runtime: list[tuple[int, int]], sync: list[tuple[int, int]]) -> str:
        gaps = list(find_gaps(
            blocks, None, {(None, 12): launch},
            {thread: Coverage(runtime)}, {thread: Coverage(sync)},
        ))  # fmt: skip
        assert len(gaps) == 1 and gaps[0].dur == 90_000
        return gaps[0].cause

    early = Launch(7, 1_000, 3_000, thread)  # launched before the GPU went idle
    assert cause(early, [(1_000, 3_000)], []) == "sync-bound"
    late = Launch(7, 95_000, 99_000, thread)
    assert cause(late, [(10_000, 99_000)], [(10_000, 90_000)]) == "sync-bound"
    assert cause(late, [(10_000, 99_000)], []) == "launch-bound"
    assert cause(late, [(95_000, 99_000)], []) == "host-bound"
    assert next(find_gaps(blocks, None, {}, {}, {})).cause == "unknown"
