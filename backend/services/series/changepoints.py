"""E-divisive means change-point detection with a permutation significance test.

The method of Matteson & James (2014) with alpha = 1, as used by MongoDB (Daly et al.,
ICPE 2020) and Apache Otava: split the series where the energy distance between the two
sides is largest, keep the split only if fewer than `alpha` of random permutations of the
segment give as large a statistic, and recurse. Pure Python: a series is at most a few
hundred points, and the O(n^2) statistic stays in milliseconds at that size.

Public surface: `ChangePoint`, `e_divisive`.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

DEFAULT_ALPHA = 0.01
DEFAULT_PERMUTATIONS = 199


@dataclass(frozen=True, slots=True)
class ChangePoint:
    """A significant shift: `index` is the first point of the new regime."""

    index: int
    p_value: float
    before: float
    after: float

    @property
    def shift_pct(self) -> float:
        """Relative size of the shift of the mean, in percent of the value before."""
        return 100.0 * (self.after - self.before) / abs(self.before) if self.before else math.inf


def _within(xs: Sequence[float]) -> list[float]:
    """w[t] = sum of |x_i - x_j| over pairs i < j < t."""
    out = [0.0] * (len(xs) + 1)
    for t in range(1, len(xs)):
        xt = xs[t]
        out[t + 1] = out[t] + math.fsum(abs(xt - v) for v in xs[:t])
    out[1] = 0.0
    return out


def _best_split(xs: Sequence[float], min_size: int) -> tuple[int, float]:
    """The split with the largest energy statistic Q, and Q (tau, q)."""
    n = len(xs)
    if n < 2 * min_size:
        return -1, -math.inf
    left = _within(xs)
    right_rev = _within(xs[::-1])
    total = left[n]
    best_tau, best_q = -1, -math.inf
    for tau in range(min_size, n - min_size + 1):
        m, k = tau, n - tau
        wl, wr = left[tau], right_rev[k]
        cross = total - wl - wr
        energy = 2.0 * cross / (m * k) - wl / (m * (m - 1) / 2) - wr / (k * (k - 1) / 2)
        q = m * k / n * energy
        if q > best_q:
            best_tau, best_q = tau, q
    return best_tau, best_q


def _significance(
    xs: Sequence[float], q_obs: float, min_size: int, permutations: int, rng: random.Random
) -> float:
    shuffled = list(xs)
    exceed = 0
    for _ in range(permutations):
        rng.shuffle(shuffled)
        if _best_split(shuffled, min_size)[1] >= q_obs:
            exceed += 1
    return (exceed + 1) / (permutations + 1)


def e_divisive(
    series: Sequence[float],
    *,
    alpha: float = DEFAULT_ALPHA,
    permutations: int = DEFAULT_PERMUTATIONS,
    min_size: int = 3,
    seed: int = 0,
) -> list[ChangePoint]:
    """Find the significant change points of a series.

    Args:
        series: values in time order.
        alpha: significance level of the permutation test.
        permutations: permutations per candidate; the smallest possible p-value is
            ``1 / (permutations + 1)``, so keep it above ``1 / alpha``.
        min_size: fewest points on each side of a split.
        seed: seeds the permutations, so the same series always gives the same answer.

    Returns:
        Change points in index order, each with its p-value and the means either side.
    """
    rng = random.Random(seed)
    bounds = [0, len(series)]
    p_values: dict[int, float] = {}
    while True:
        best: tuple[float, int, int, int] | None = None
        for lo, hi in itertools.pairwise(bounds):
            tau, q = _best_split(series[lo:hi], min_size)
            if tau > 0 and (best is None or q > best[0]):
                best = (q, tau, lo, hi)
        if best is None:
            break
        q, tau, lo, hi = best
        p = _significance(series[lo:hi], q, min_size, permutations, rng)
        if p > alpha:
            break
        p_values[lo + tau] = p
        bounds = sorted([*bounds, lo + tau])
    return [_describe(series, bounds, cp, p_values[cp]) for cp in bounds[1:-1]]


def _describe(series: Sequence[float], bounds: list[int], cp: int, p: float) -> ChangePoint:
    i = bounds.index(cp)
    before = series[bounds[i - 1] : cp]
    after = series[cp : bounds[i + 1]]
    return ChangePoint(cp, p, math.fsum(before) / len(before), math.fsum(after) / len(after))
