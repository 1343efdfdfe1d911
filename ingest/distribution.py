"""Exact order statistics of integer durations, shared by kernel stats and summaries.

Percentiles use the nearest-rank definition: p-th percentile = the ceil(p/100 * n)-th
smallest value. It always returns a duration that was measured (no interpolation), and it
is computed with integers only, so two implementations agree to the nanosecond.

Public surface: `distribution`, `nearest_rank`.
"""

from __future__ import annotations

from typing import TypedDict


class Distribution(TypedDict):
    """Exact order statistics of a set of integer durations (nearest-rank percentiles)."""

    count: int
    mean_ns: int  # floor of the mean
    min_ns: int
    p50_ns: int  # nearest rank: the ceil(0.50 * count)-th smallest value
    p95_ns: int  # nearest rank: the ceil(0.95 * count)-th smallest value
    max_ns: int


def nearest_rank(ordered: list[int], percent: int) -> int:
    """The `percent`-th percentile of an ascending, non-empty list.

    >>> nearest_rank([15, 20, 35, 40, 50], 50), nearest_rank([15, 20, 35, 40, 50], 95)
    (35, 50)
    >>> nearest_rank(list(range(1, 21)), 95), nearest_rank([7], 50)
    (19, 7)
    """
    rank = (percent * len(ordered) + 99) // 100  # ceil(percent/100 * n), in integers
    return ordered[max(rank, 1) - 1]


def distribution(values: list[int]) -> Distribution:
    """Count, floor mean, min, p50, p95 and max of a non-empty list (sorted in place).

    >>> distribution([40, 15, 50, 20, 35])
    {'count': 5, 'mean_ns': 32, 'min_ns': 15, 'p50_ns': 35, 'p95_ns': 50, 'max_ns': 50}
    """
    values.sort()
    return {
        "count": len(values),
        "mean_ns": sum(values) // len(values),
        "min_ns": values[0],
        "p50_ns": nearest_rank(values, 50),
        "p95_ns": nearest_rank(values, 95),
        "max_ns": values[-1],
    }
