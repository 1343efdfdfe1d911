"""The noise band's maths (`series.noise`): pooled spread, minimum detectable change and
the bimodality coefficient, against hand-computed numbers, numpy, and a simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from backend.services.series.noise import (
    BIMODAL_AT,
    bimodality_coefficient,
    estimate_band,
    min_detectable_change,
    pooled_log_spread,
)

E2 = math.exp(0.02)


def test_pooled_spread_by_hand() -> None:
    # Three commits of two runs, ln values 0 and 0.02: residuals +-0.01, ss = 6e-4, df = 3.
    assert pooled_log_spread([[1.0, E2], [5.0, 5.0 * E2], [9.0, 9.0 * E2]]) == pytest.approx(
        (math.sqrt(6e-4 / 3), 3, 6)
    )


def test_pooled_spread_matches_numpy() -> None:
    rng = np.random.default_rng(7)
    groups = [
        list(level * np.exp(rng.normal(0, 0.03, n)))
        for level, n in [(100, 2), (250, 5), (40, 3), (7, 1)]
    ]
    used = [np.log(g) for g in groups if len(g) >= 2]
    ss = sum(float(np.sum((g - g.mean()) ** 2)) for g in used)
    df = sum(len(g) for g in used) - len(used)
    spread, commits, runs = pooled_log_spread(groups) or (0.0, 0, 0)
    assert (commits, runs) == (3, 10)
    assert spread == pytest.approx(math.sqrt(ss / df), rel=1e-12)


def test_too_few_runs_or_bad_values_give_no_spread() -> None:
    assert pooled_log_spread([[1.0, 2.0, 3.0]]) is None  # df 2 < 3
    assert pooled_log_spread([[1.0], [2.0], [3.0]]) is None  # no commit repeated
    assert pooled_log_spread([[0.0, -1.0, math.inf, 5.0], [1.0, 1.0]]) is None
    assert pooled_log_spread([]) is None


def test_mdc_by_hand_from_normal_tables() -> None:
    # z(0.995) = 2.5758, z(0.80) = 0.8416; s = 1 %, one run against ten.
    k = 2.5758293 + 0.8416212
    expected = 100 * (math.exp(k * 0.01 * math.sqrt(1 + 1 / 10)) - 1)
    got = min_detectable_change(0.01, 1, 10, alpha=0.01, power=0.8)
    assert got == pytest.approx(expected, rel=1e-6) and got == pytest.approx(3.649, abs=1e-3)
    # More runs on both sides: the MDC shrinks as sqrt(1/n1 + 1/n2).
    assert min_detectable_change(0.01, 5, 20, alpha=0.01, power=0.8) < got / 2
    with pytest.raises(ValueError):
        min_detectable_change(0.01, 0, 10, alpha=0.01, power=0.8)


def test_a_change_of_one_mdc_is_detected_with_the_stated_power() -> None:
    """Simulate the two-sample test on ln values: a true shift of exactly the MDC must be
    detected in 80 % of trials at alpha = 0.01."""
    s, n1, n2, alpha = 0.02, 3, 10, 0.01
    shift = math.log1p(min_detectable_change(s, n1, n2, alpha=alpha, power=0.8) / 100)
    rng = np.random.default_rng(1)
    trials = 40_000
    judged = rng.normal(shift, s, (trials, n1)).mean(axis=1)
    base = rng.normal(0.0, s, (trials, n2)).mean(axis=1)
    z = (judged - base) / (s * math.sqrt(1 / n1 + 1 / n2))
    critical = 2.5758293035489  # two-sided 1 % point of the normal
    assert float(np.mean(np.abs(z) > critical)) == pytest.approx(0.8, abs=0.01)
    # With no change, the test fires at the stated alpha.
    null = rng.normal(0.0, s * math.sqrt(1 / n1 + 1 / n2), trials) / (
        s * math.sqrt(1 / n1 + 1 / n2)
    )
    assert float(np.mean(np.abs(null) > critical)) == pytest.approx(alpha, abs=0.003)


def test_bimodality_coefficient_by_hand() -> None:
    # 10 zeros and 10 ones: m2 = 1/4, m3 = 0, m4 = 1/16, excess kurtosis -2;
    # k = (21 * -2 + 6) * 19 / (18 * 17) = -2.23529; 3 * 19^2 / (18 * 17) = 3.53922.
    assert bimodality_coefficient([0.0] * 10 + [1.0] * 10) == pytest.approx(
        1 / (3 * 361 / 306 - 36 * 19 / 306), rel=1e-9
    )
    assert bimodality_coefficient([1.0, 2.0, 3.0]) is None
    assert bimodality_coefficient([4.0] * 8) is None


def _bc_numpy(x: np.ndarray) -> float:
    """Sarle's coefficient from numpy moments (G1, G2 as SAS and Excel define them)."""
    n = len(x)
    d = x - x.mean()
    m2, m3, m4 = (float(np.mean(d**p)) for p in (2, 3, 4))
    g1 = m3 / m2**1.5 * math.sqrt(n * (n - 1)) / (n - 2)
    g2 = (n - 1) / ((n - 2) * (n - 3)) * ((n + 1) * (m4 / m2**2 - 3) + 6)
    return (g1**2 + 1) / (g2 + 3 * (n - 1) ** 2 / ((n - 2) * (n - 3)))


@pytest.mark.parametrize(
    ("draw", "bimodal"),
    [
        (lambda r: r.normal(0, 1, 400), False),
        (lambda r: r.lognormal(0, 0.25, 400), False),  # skewed, one mode
        (lambda r: np.concatenate([r.normal(0, 0.3, 200), r.normal(3, 0.3, 200)]), True),
    ],
)
def test_bimodality_coefficient_matches_numpy(draw: object, bimodal: bool) -> None:
    x = draw(np.random.default_rng(3))  # type: ignore[operator]
    bc = bimodality_coefficient(list(map(float, x)))
    assert bc == pytest.approx(_bc_numpy(x), rel=1e-9)
    assert (bc is not None and bc > BIMODAL_AT) is bimodal


def test_band_flags_two_clusters_in_the_aa_runs() -> None:
    # One commit run 12 times: half the runs at 100 ms, half at 108 ms (two clock states).
    two = {"c1": [100.0, 100.2, 99.9, 100.1, 100.0, 99.8, 108.0, 108.1, 107.9, 108.2, 108.0, 107.8]}
    band = estimate_band(two, n_judged=1, n_baseline=10)
    assert band is not None and band.bimodal and band.bimodality is not None
    assert (band.commits, band.runs) == (1, 12)
    logs = np.log(two["c1"])
    assert band.spread_pct == pytest.approx(100 * float(np.std(logs, ddof=1)), rel=1e-12)
    one = {"c1": [100.0, 100.3, 99.6, 100.1, 99.9, 100.4, 99.7, 100.0, 100.2, 99.8, 100.1, 99.95]}
    steady = estimate_band(one)
    assert steady is not None and not steady.bimodal
    assert steady.mdc_pct == pytest.approx(
        min_detectable_change(steady.spread_pct / 100, 1, 10, alpha=0.01, power=0.8)
    )
    # Too few runs of one commit for a shape: no coefficient, no warning.
    few = estimate_band({"a": [1.0, 1.1], "b": [2.0, 2.1], "c": [3.0, 3.3]})
    assert few is not None and few.bimodality is None and not few.bimodal
