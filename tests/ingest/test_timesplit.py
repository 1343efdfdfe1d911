"""`split_device` (numpy) answers what the boundary-by-boundary sweep it replaced answers.

The reference below is that sweep, verbatim but for its name: boundary keys
`(time << 4) | (category << 1) | is_start`, sorted, walked once with a heap of gaps.
Random devices with ties everywhere (small integer times), zero-length and negative
durations, intervals before the span start, and few kept gaps (where the heap's rule for
equal lengths decides).
"""

from __future__ import annotations

import heapq
import random

import numpy as np
import pytest

from ingest.summary.shape import TimeSplit
from ingest.summary.timesplit import Category, Gap, _split, split_device


def _reference(keys: list[int], span_ns: int, max_gaps: int) -> tuple[TimeSplit, list[Gap]]:
    keys.sort()
    active = [0, 0, 0, 0, 0]
    busy = comp_u = comm_u = host_u = copy_u = mset_u = 0
    ex_comm = ex_copy = ex_mset = comm_comp = copy_comp = 0
    gaps: list[Gap] = []
    prev = depth = 0
    for key in keys:
        t = key >> 4
        if t > prev:
            seg = t - prev
            if depth:
                busy += seg
                comp, comm, host, other, mset = active
                if comp:
                    comp_u += seg
                    if comm:
                        comm_comp += seg
                    if host:
                        copy_comp += seg
                elif comm:
                    ex_comm += seg
                elif host or other:
                    ex_copy += seg
                else:
                    ex_mset += seg
                if comm:
                    comm_u += seg
                if host:
                    host_u += seg
                if host or other:
                    copy_u += seg
                if mset:
                    mset_u += seg
            elif len(gaps) < max_gaps or seg > gaps[0][0]:
                _keep(gaps, (seg, prev), max_gaps)
            prev = t
        code = key & 15
        step = 1 if code & 1 else -1
        active[code >> 1] += step
        depth += step
    if span_ns > prev:
        _keep(gaps, (span_ns - prev, prev), max_gaps)
    unions = (busy, comp_u, comm_u, host_u, copy_u, mset_u)
    return _split(span_ns, unions, (ex_comm, ex_copy, ex_mset), comm_comp, copy_comp), sorted(
        gaps, reverse=True
    )


def _keep(heap: list[Gap], gap: Gap, size: int) -> None:
    if len(heap) < size:
        heapq.heappush(heap, gap)
    elif gap > heap[0]:
        heapq.heapreplace(heap, gap)


def _device(rng: random.Random) -> tuple[list[int], list[int], list[int]]:
    n = rng.randint(0, 40)
    horizon = rng.choice((5, 30, 200))
    starts = [rng.randint(0, horizon) for _ in range(n)]
    durs = [rng.choice((0, 1, 2, rng.randint(0, horizon // 2))) for _ in range(n)]
    if rng.random() < 0.1 and n:
        durs[0] = -rng.randint(1, 5)  # hostile: an end before its start
    if rng.random() < 0.1 and n:
        starts[0] = -rng.randint(1, 5)  # an interval before the span's start
    return starts, durs, [rng.randrange(len(Category)) for _ in range(n)]


@pytest.mark.parametrize("seed", range(300))
def test_split_device_is_the_boundary_sweep(seed: int) -> None:
    rng = random.Random(seed)
    starts, durs, cats = _device(rng)
    ends = [s + d for s, d in zip(starts, durs, strict=True)]
    span = max([0, *ends, *starts]) + rng.choice((0, 0, 3))
    for max_gaps in (1, 2, 3, 20):
        keys: list[int] = []
        for s, e, c in zip(starts, ends, cats, strict=True):
            keys += [(s << 4) | (c << 1) | 1, (e << 4) | (c << 1)]
        expected = _reference(keys, span, max_gaps)
        col = [np.array(v, dtype=np.int64) for v in (starts, ends, cats)]
        assert split_device(*col, span, max_gaps) == expected, max_gaps
