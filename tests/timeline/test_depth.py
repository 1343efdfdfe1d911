"""A lane's deepest nesting (`MaxDepth`), measured on the index's sorted row stream, agrees
with the depths raw windows give (`windows._set_depths`, run here on the same events)."""

from __future__ import annotations

import random

import pytest

from backend.services.timeline.depth import MaxDepth
from backend.services.timeline.windows import Item, _set_depths

Row = tuple[int, int, str, int, int | None]


def _max_depth(rows: list[Row]) -> int:
    depth = MaxDepth()
    assert list(depth.watch(iter(sorted(rows)))) == sorted(rows), "rows pass unchanged"
    return depth.value


def _window_max_depth(rows: list[Row]) -> int:
    items = [
        Item(lane=0, start_ns=s, dur_ns=e - s, name=n, category="x", busy_ns=0, id=i)
        for s, e, n, i, _ in rows
    ]
    _set_depths(items)
    return max((i.depth for i in items), default=0)


@pytest.mark.parametrize(
    ("intervals", "expected"),
    [
        ([], 0),
        ([(0, 10)], 0),
        ([(0, 10), (10, 20)], 0),  # touching is not nesting
        ([(0, 10), (2, 8), (3, 5), (4, 4)], 3),  # a zero-length event nests too
        ([(0, 10), (0, 5), (0, 2)], 2),  # equal starts: the longer is the parent
        ([(0, 5), (0, 5)], 1),  # identical events stack
        ([(5, 5), (5, 5), (5, 5)], 0),  # zero-length events at one instant only touch
        ([(0, 9), (5, 5), (5, 5), (5, 7)], 2),  # after the longer ones at an equal start
        ([(0, 10), (5, 15), (12, 20)], 2),  # overlap without nesting: the windows stack
    ],
)
def test_edge_cases(intervals: list[tuple[int, int]], expected: int) -> None:
    rows: list[Row] = [(s, e, "x", i, None) for i, (s, e) in enumerate(intervals)]
    assert _max_depth(rows) == expected
    assert _window_max_depth(rows) == expected


@pytest.mark.parametrize("seed", range(40))
def test_agrees_with_the_window_stack_on_random_lanes(seed: int) -> None:
    rng = random.Random(seed)
    rows: list[Row] = []
    for i in range(rng.randint(1, 300)):
        start = rng.choice([0, 10, 20]) + rng.randint(0, 60) * rng.choice([1, 5])
        rows.append((start, start + rng.choice([0, 0, 1, 3, 10, 40, 100]), "x", i, None))
    assert _max_depth(rows) == _window_max_depth(rows)


def test_an_unconsumed_stream_reports_nothing_yet() -> None:
    depth = MaxDepth()
    it = depth.watch(iter([(0, 10, "a", 1, None), (1, 2, "b", 2, None)]))
    next(it)
    assert depth.value == 0
    list(it)
    assert depth.value == 1
