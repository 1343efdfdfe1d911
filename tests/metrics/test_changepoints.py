"""E-divisive change points and the sample tests on seeded synthetic series.

The false-positive figures in docs/PERFORMANCE.md come from `false_positive_rate` here,
run on more series by perf/bench_metrics.py --fpr.
"""

from __future__ import annotations

import random

import pytest

from backend.services.series.changepoints import e_divisive
from backend.services.series.statistics import mann_whitney_u, welch_t_test


def _noise(rng: random.Random, n: int, mean: float = 100.0, sd: float = 2.0) -> list[float]:
    return [rng.gauss(mean, sd) for _ in range(n)]


def false_positive_rate(series: int, length: int, seed: int) -> float:
    """Share of pure-noise series in which at least one change point is reported."""
    rng = random.Random(seed)
    hits = sum(bool(e_divisive(_noise(rng, length), seed=i)) for i in range(series))
    return hits / series


@pytest.mark.parametrize(("at", "shift_sd"), [(20, 3.0), (35, 2.0), (10, 4.0)])
def test_a_single_step_is_found_where_it_is(at: int, shift_sd: float) -> None:
    rng = random.Random(at)
    series = _noise(rng, at) + _noise(rng, 50 - at, mean=100 + 2 * shift_sd)
    cps = e_divisive(series)
    assert len(cps) == 1
    assert abs(cps[0].index - at) <= 1
    assert cps[0].p_value <= 0.01
    assert cps[0].shift_pct == pytest.approx(2 * shift_sd, abs=1.5)


def test_two_steps_up_and_back_down() -> None:
    rng = random.Random(3)
    series = _noise(rng, 25) + _noise(rng, 25, mean=110) + _noise(rng, 25)
    assert [c.index for c in e_divisive(series)] == [25, 50]


def test_the_answer_is_deterministic() -> None:
    series = _noise(random.Random(5), 20) + _noise(random.Random(6), 20, mean=104)
    assert e_divisive(series) == e_divisive(series)


def test_short_or_flat_series_have_no_change_points() -> None:
    assert e_divisive([1.0, 2.0, 3.0]) == []
    assert e_divisive([5.0] * 40) == []


def test_false_positive_rate_on_noise_is_low() -> None:
    # 100 series of 50 points at alpha = 0.01: measured 0.01 (see docs/PERFORMANCE.md).
    assert false_positive_rate(100, 50, seed=11) <= 0.05


def test_welch_and_mann_whitney_agree_on_clear_and_null_cases() -> None:
    rng = random.Random(1)
    a, same, shifted = _noise(rng, 40), _noise(rng, 40), _noise(rng, 40, mean=104)
    assert welch_t_test(a, shifted)[1] < 1e-6 and mann_whitney_u(a, shifted)[1] < 1e-6
    assert welch_t_test(a, same)[1] > 0.05 and mann_whitney_u(a, same)[1] > 0.05


def test_welch_p_value_matches_a_textbook_value() -> None:
    # scipy.stats.ttest_ind(a, b, equal_var=False) gives t = 1.1429, p = 0.2937 for these.
    t, p = welch_t_test([1.0, 2.0, 3.0, 4.0, 5.0], [2.0, 3.0, 4.0, 5.0, 9.0])
    assert t == pytest.approx(-1.142857, abs=1e-5) or t == pytest.approx(1.142857, abs=1e-5)
    assert p == pytest.approx(0.29373, abs=1e-4)
