"""Exact order statistics of integer durations, shared by kernel stats and summaries.

The percentile method, the same everywhere in perfdash's trace figures:

- **p50 is the median** as `numpy.median` and `nsys stats` ("Med") define it: the middle
  value of an odd count, the mean of the two middle values of an even count. Durations
  are integer ns, so that mean is rounded down to the ns (at most 0.5 ns off).
- **p95 is nearest-rank**: the ceil(0.95 * n)-th smallest value, always a duration that
  was measured (no interpolation), computed with integers only.

`distribution` states the definition over a list; `group_distributions` is the same
definition for many groups of a column at once (numpy, int64 integer math only; groups
whose sums could overflow int64 go through `distribution` itself), for kernel stats and
kernel groups over millions of launches. Tests check that the two agree.

Public surface: `distribution`, `median`, `nearest_rank`, `group_distributions`.
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np
from numpy.typing import NDArray

_INT64_LIMIT = 1 << 63


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


def group_distributions(
    ordered: NDArray[np.int64], starts: NDArray[np.intp]
) -> list[tuple[Distribution, int]]:
    """`distribution` of each group of a column, and the group's exact sum.

    Args:
        ordered: the values, each group's contiguous and ascending within it.
        starts: the index in `ordered` where each group begins, ascending, the first 0.

    Returns:
        Per group, in order, its `Distribution` (all Python ints) and its sum.

    >>> [total for _, total in group_distributions(np.array([10, 20, 35, 7]), np.array([0, 3]))]
    [65, 7]
    >>> group_distributions(np.array([10, 15, 20, 35, 40, 50]), np.array([0]))[0][0]["p50_ns"]
    27
    """
    if not len(starts):
        return []
    ends = np.append(starts[1:], len(ordered))
    counts = ends - starts
    biggest = max(abs(int(ordered.min())), abs(int(ordered.max())))
    if biggest * len(ordered) >= _INT64_LIMIT:  # a sum or a midpoint could overflow int64
        return [_exact(ordered[s:e].tolist()) for s, e in zip(starts, ends, strict=True)]
    totals = np.add.reduceat(ordered, starts)
    low = ordered[starts + (counts - 1) // 2]
    high = ordered[starts + counts // 2]  # low == high for an odd count
    rank = np.maximum((95 * counts + 99) // 100, 1)  # as `nearest_rank`, in integers
    p50 = low + (high - low) // 2  # == (low + high) // 2, as `median`, without overflow
    columns = (
        counts, totals // counts, ordered[starts], p50, ordered[starts + rank - 1],
        ordered[ends - 1], totals,
    )  # fmt: skip
    return [
        ({"count": n, "mean_ns": mean, "min_ns": lo, "p50_ns": p50, "p95_ns": p95,
          "max_ns": hi}, total)
        for n, mean, lo, p50, p95, hi, total in zip(*(c.tolist() for c in columns), strict=True)
    ]  # fmt: skip


def _exact(values: list[int]) -> tuple[Distribution, int]:
    return distribution(values), sum(values)
