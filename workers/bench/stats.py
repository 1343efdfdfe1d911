"""Order statistics over per-iteration samples; pure, so pages, tests and runs agree."""

from __future__ import annotations

import math
from collections.abc import Sequence


def percentile(samples: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default), q in [0, 100].

    >>> percentile([1.0, 2.0, 3.0, 4.0], 50)
    2.5
    >>> percentile([5.0], 95)
    5.0
    """
    if not samples:
        raise ValueError("percentile of no samples")
    ordered = sorted(samples)
    pos = (len(ordered) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def summarize(samples: Sequence[float]) -> dict[str, float]:
    """p50, p95, max, min and mean of the samples.

    >>> summarize([1.0, 2.0, 3.0])["p50"]
    2.0
    """
    return {
        "p50": percentile(samples, 50),
        "p95": percentile(samples, 95),
        "max": max(samples),
        "min": min(samples),
        "mean": sum(samples) / len(samples),
    }
