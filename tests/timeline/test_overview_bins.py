"""The utilisation overview's bins do not depend on the order the blocks are read in.

DuckDB returns a scan of several row groups filtered by a lane list in any order, so
`_bin_busy` must give the same floats for every order of the same blocks; and each bin
must be the exact busy time in it (computed here with fractions) to the last few digits.
"""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from backend.services.timeline.utilization import _bin_busy

T0, T1, BINS = 1_000_003, 9_000_017, 7


def _blocks(seed: int, n: int = 400) -> list[tuple[int, int, int]]:
    """Blocks (start, end, busy) of uneven lengths and busy shares, some across bins."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        start = rng.randrange(T0, T1 - 10)
        end = min(T1, start + rng.choice([7, 333, 10_007, 1_234_567]))
        out.append((start, end, rng.randrange(1, end - start + 1)))
    return out


def _exact(blocks: list[tuple[int, int, int]]) -> list[Fraction]:
    width = Fraction(T1 - T0, BINS)
    bins = [Fraction(0)] * BINS
    for start, end, busy in blocks:
        for i in range(BINS):
            lo, hi = max(start, T0 + i * width), min(end, T0 + (i + 1) * width)
            if hi > lo:
                bins[i] += (hi - lo) * Fraction(busy, end - start)
    return bins


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_order_of_the_blocks_gives_the_same_bins(seed: int) -> None:
    blocks = _blocks(seed)
    first = _bin_busy(blocks, T0, T1, BINS)
    rng = random.Random(seed)
    for _ in range(30):
        shuffled = blocks[:]
        rng.shuffle(shuffled)
        assert _bin_busy(shuffled, T0, T1, BINS) == first
    for got, want in zip(first, _exact(blocks), strict=True):
        assert abs(got - want) <= want * Fraction(1, 10**12)
