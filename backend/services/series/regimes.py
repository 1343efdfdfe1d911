"""Regimes of a series: the stretches between its change points, each good or regressed.

A regime is regressed when its mean is worse, in the metric's direction, than the last
good regime's by more than the SLA's tolerance; the first regime is the reference. This
is what makes a regression *confirmed*: E-divisive has placed its start, so baselines can
leave its runs out and every later verdict can name the same first bad commit as the
series page. Pure: values in, regimes out.

Public surface: `REGRESSION_ALPHA`, `MIN_POINTS`, `Regime`, `find_regimes`, `open_regression`,
`streak_start`.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from backend.services.series.changepoints import ChangePoint, e_divisive

MIN_POINTS = 6  # E-divisive needs three points either side of a split
# The significance of the change points that confirm a regression: SLA verdicts and the
# series page both use it, so both name the same commits.
REGRESSION_ALPHA = 0.01


@functools.lru_cache(maxsize=64)
def _change_points(values: tuple[float, ...], alpha: float) -> tuple[ChangePoint, ...]:
    """E-divisive is seeded, so its answer is a function of the values: the relative and
    regression rules of one push read the same baseline series and share one search."""
    return tuple(e_divisive(values, alpha=alpha))


@dataclass(frozen=True, slots=True)
class Regime:
    """Points `start` to `end - 1` of the series; `change` is the change point at `start`."""

    start: int
    end: int
    level: float
    regressed: bool
    change: ChangePoint | None


def _worse_pct(level: float, reference: float, lower_is_better: bool) -> float:
    if not reference:
        return 0.0
    shift = 100.0 * (level - reference) / abs(reference)
    return shift if lower_is_better else -shift


def find_regimes(
    values: Sequence[float], *, lower_is_better: bool, tolerance_pct: float, alpha: float
) -> list[Regime]:
    """Split a series (oldest first) at its change points and judge each stretch.

    Args:
        values: the series, oldest first.
        lower_is_better: the metric's direction.
        tolerance_pct: how much worse than the last good level a regime may be.
        alpha: significance level of the change points.

    Returns:
        The regimes in order; one good regime when there is no change point.

    >>> [r.regressed for r in find_regimes([1.0] * 6 + [2.0] * 6, lower_is_better=True,
    ...                                   tolerance_pct=5, alpha=0.01)]
    [False, True]
    """
    if not values:
        return []
    cps = _change_points(tuple(values), alpha) if len(values) >= MIN_POINTS else ()
    bounds = [0, *(c.index for c in cps), len(values)]
    changes: list[ChangePoint | None] = [None, *cps]
    out, reference = [], None
    for (start, end), change in zip(itertools.pairwise(bounds), changes, strict=True):
        level = sum(values[start:end]) / (end - start)
        regressed = reference is not None and (
            _worse_pct(level, reference, lower_is_better) > tolerance_pct
        )
        if not regressed:
            reference = level
        out.append(Regime(start, end, level, regressed, change))
    return out


def open_regression(found: Sequence[Regime]) -> Regime | None:
    """The first regime of the trailing run of regressed ones: where today's regression
    began. None when the newest regime is good."""
    start = None
    for regime in reversed(found):
        if not regime.regressed:
            break
        start = regime
    return start


def streak_start(values: Sequence[float], baseline: float) -> int:
    """The oldest index of the trailing points that sit nearer the newest value than the
    baseline: where a shift too recent for a change point began.

    >>> streak_start([10.0, 10.2, 9.9, 12.1, 11.8, 12.0], 10.0)
    3
    """
    newest = values[-1]
    middle = (newest + baseline) / 2
    above = newest > middle
    i = len(values) - 1
    while i > 0 and (values[i - 1] > middle) == above:
        i -= 1
    return i
