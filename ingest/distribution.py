"""Exact order statistics of integer durations, shared by kernel stats and summaries.

The percentile method, the same everywhere in perfdash's trace figures:

- **p50 is the median** as `numpy.median` and `nsys stats` ("Med") define it: the middle
  value of an odd count, the mean of the two middle values of an even count. Durations
  are integer ns, so that mean is rounded down to the ns (at most 0.5 ns off).
- **p95 is nearest-rank**: the ceil(0.95 * n)-th smallest value, always a duration that
  was measured (no interpolation), computed with integers only.

Public surface: `distribution`, `median`, `nearest_rank`.
"""

from __future__ import annotations

from typing import TypedDict


class Distribution(TypedDict):
    """Exact order statistics of a set of integer durations (see the module docstring)."""

    count: int
    mean_ns: int  # floor of the mean
    min_ns: int
    p50_ns: int  # median: mean of the two middle values for an even count, floored to the ns
    p95_ns: int  # nearest rank: the ceil(0.95 * count)-th smallest value
    max_ns: int


def median(ordered: list[int]) -> int:
    """The median of an ascending, non-empty list, floored to an integer.

    >>> median([15, 20, 35, 40, 50]), median([10, 20, 30, 41]), median([7])
    (35, 25, 7)
    """
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) // 2


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

    >>> distribution([40, 15, 50, 20, 35, 10])
    {'count': 6, 'mean_ns': 28, 'min_ns': 10, 'p50_ns': 27, 'p95_ns': 50, 'max_ns': 50}
    """
    values.sort()
    return {
        "count": len(values),
        "mean_ns": sum(values) // len(values),
        "min_ns": values[0],
        "p50_ns": median(values),
        "p95_ns": nearest_rank(values, 95),
        "max_ns": values[-1],
    }
