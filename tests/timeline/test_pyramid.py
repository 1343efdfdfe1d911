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


# The mix rule restated here, not imported: the category of a GPU event by its name.
_GPU_NAMES = {
    "gemm_kernel": 0,
    "void ncclDevKernel_AllReduce_Sum_bf16_RING_LL(x)": 1,
    "Memcpy HtoD (Pageable -> Device)": 2,
    "Memset (Device)": 3,
    "memcpy_kernel": 0,  # a kernel, not a copy: the rule is the parsers' "Memcpy" prefix
}


def _gpu_events(seed: int, n: int) -> list[tuple[int, int, str, int, int | None]]:
    rng = random.Random(seed)
    t, out = 0, []
    for i in range(n):
        t += rng.choice([0, 500, 3_000, 9_000, 70_000, 600_000])
        dur = rng.choice([0, 100, 2_000, 40_000, 300_000])  # overlaps and empty events too
        out.append((t, t + dur, rng.choice(list(_GPU_NAMES)), i, i))
    return sorted(out)


def _expected_mix(events: list[tuple[int, int, str, int, int | None]]) -> list[int]:
    mix = [0, 0, 0, 0]
    for s, e, name, *_ in events:
        mix[_GPU_NAMES[name]] += e - s
    return mix


def test_mix_is_each_blocks_summed_durations_by_category_at_every_level() -> None:
    events = _gpu_events(2, 3000)
    by_level: dict[int, list[Block]] = {}
    for level, block in pyramid(iter(events), 7, mixed=True):
        by_level.setdefault(level, []).append(block)
    for level, blocks in by_level.items():
        at = 0
        for b in blocks:  # a block holds the next `events` events in start order
            inside = events[at : at + b.events]
            at += b.events
            assert b.mix == _expected_mix(inside), (level, b.start)
            assert sum(b.mix) == sum(e - s for s, e, *_ in inside)
        assert at == len(events)
    assert any(sum(1 for m in b.mix or [] if m) > 1 for b in by_level[1]), "mixed blocks"


def test_a_single_category_block_puts_its_whole_duration_in_that_category() -> None:
    events = [(0, 10_000, "ncclKernel_x", 1, None), (5_000, 30_000, "ncclKernel_y", 2, None)]
    (block,) = first_level(events, mixed=True)
    assert block.mix == [0, 35_000, 0, 0] and block.busy == 30_000  # summed, not the union
    copies = [(0, 100, "Memcpy DtoH (Device -> Pinned)", 1, None)]
    assert next(first_level(copies, mixed=True)).mix == [0, 0, 100, 0]
    assert next(first_level([(0, 0, "k", 1, None)], mixed=True)).mix == [0, 0, 0, 0]


def test_lanes_without_mix_keep_none() -> None:
    events = _gpu_events(3, 200)
    assert all(b.mix is None for _, b in pyramid(iter(events), 4))
    assert list(first_level([], mixed=True)) == []
