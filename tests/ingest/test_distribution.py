"""`group_distributions` (numpy, many groups at once) is `distribution` (the definition):
random groups with odd and even counts, ties, negatives, and values large enough that
int64 sums would overflow."""

from __future__ import annotations

import random

import numpy as np
import pytest

from ingest.distribution import distribution, group_distributions


def _groups(rng: random.Random, spread: int) -> list[list[int]]:
    return [
        [
            rng.randint(-spread // 10, spread)
            for _ in range(rng.choice((1, 2, 3, 4, 19, 20, 21, 40)))
        ]
        for _ in range(rng.randint(1, 25))
    ]


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("spread", [3, 1000, 2**40, 2**62])
def test_group_distributions_is_distribution(seed: int, spread: int) -> None:
    groups = _groups(random.Random(seed), spread)
    ordered = [v for g in groups for v in sorted(g)]
    starts = np.cumsum([0] + [len(g) for g in groups[:-1]])
    got = group_distributions(np.array(ordered, dtype=np.int64), starts)
    assert got == [(distribution(list(g)), sum(g)) for g in groups]
    assert all(type(v) is int for d, total in got for v in (*d.values(), total))


def test_extremes_of_int64() -> None:
    top = 2**63 - 1
    got = group_distributions(
        np.array([top - 1, top, -top, -top], dtype=np.int64), np.array([0, 2])
    )
    assert got == [
        (distribution([top - 1, top]), 2 * top - 1),
        (distribution([-top, -top]), -2 * top),
    ]
