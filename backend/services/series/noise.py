"""Noise bands: how far a benchmark's metric moves between runs of the same code (pure).

The band is learned from A/A runs, repeated runs of one commit (`perfdash bench run NAME
--repeat N`, or a spec's `aa_repeats`). Within each commit the runs differ only by noise,
so their spread, pooled over commits, is the run-to-run noise of the series.

Estimator: the pooled standard deviation of ln(value) within commits,
``s = sqrt(sum_g sum_i (ln x_gi - mean_g)^2 / sum_g (n_g - 1))``. The log makes it
relative (for small spreads ``s`` is the coefficient of variation), so commits at
different levels pool; pooling uses every degree of freedom, which matters with A/A
batches of 2 to 10 runs, where a MAD is coarse (about 37 % efficient at the normal) and
degenerate at 2 runs. It is not robust to outliers: runs flagged throttled or contended
are left out before it is computed, and the bimodality warning catches two clusters.

Minimum detectable change (two-sample, normal approximation, two-sided at `alpha` as the
regression tests are, power `power`), comparing the mean of ``n1`` judged runs with the
mean of ``n2`` baseline runs:
``mdc = (z(1 - alpha/2) + z(power)) * s * sqrt(1/n1 + 1/n2)``, in ln units, reported as
``100 * (exp(mdc) - 1)`` percent.

Bimodality: Sarle's bimodality coefficient of the within-commit residuals of commits with
at least `SHAPE_MIN_RUNS` runs, ``b = (g^2 + 1) / (k + 3 (n-1)^2 / ((n-2)(n-3)))`` with
the sample skewness ``g`` and excess kurtosis ``k`` (bias-corrected, as SAS and
Pfister et al. 2013 use); ``b > 5/9`` (the value of a uniform distribution) warns.

Public surface: `NoiseBand`, `estimate_band`, `pooled_log_spread`,
`min_detectable_change`, `bimodality_coefficient`, `MIN_DF`, `POWER`, `BIMODAL_AT`.
"""

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist

from backend.services.series.regimes import REGRESSION_ALPHA

POWER = 0.8
MIN_DF = 3  # degrees of freedom (runs - commits) before a band is given
BIMODAL_AT = 5 / 9  # Sarle's coefficient of a uniform distribution
SHAPE_MIN_RUNS = 4  # runs of one commit before its residuals count for the shape
SHAPE_MIN_VALUES = 10  # residuals before a bimodality coefficient is given


@dataclass(frozen=True, slots=True)
class NoiseBand:
    """A series' run-to-run noise and the smallest change it lets a rule see."""

    spread_pct: float  # pooled within-commit stddev of ln(value), in percent (~ CV)
    mdc_pct: float  # minimum detectable change, percent
    commits: int  # commits with two runs or more
    runs: int  # runs of those commits
    n_judged: int  # n1 of the MDC
    n_baseline: int  # n2 of the MDC
    alpha: float
    power: float
    bimodality: float | None  # Sarle's coefficient, None with too few runs
    bimodal: bool


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def _residuals(group: Sequence[float]) -> list[float]:
    logs = [math.log(v) for v in group]
    mean = _mean(logs)
    return [x - mean for x in logs]


def pooled_log_spread(groups: Sequence[Sequence[float]]) -> tuple[float, int, int] | None:
    """(pooled stddev of ln values within groups, groups used, runs used), or None when
    fewer than `MIN_DF` degrees of freedom. Groups of one run and values <= 0 are left out.

    >>> s, g, n = pooled_log_spread([[100.0, 100.0], [50.0, 50.0, 50.0, 50.0]])
    >>> (s, g, n)
    (0.0, 2, 6)
    """
    used = [[v for v in g if v > 0 and math.isfinite(v)] for g in groups]
    used = [g for g in used if len(g) >= 2]
    runs = sum(len(g) for g in used)
    df = runs - len(used)
    if df < MIN_DF:
        return None
    ss = math.fsum(r * r for g in used for r in _residuals(g))
    return math.sqrt(ss / df), len(used), runs


def min_detectable_change(
    spread: float, n_judged: int, n_baseline: int, *, alpha: float, power: float
) -> float:
    """The smallest relative change (percent) a two-sided test at `alpha` detects with
    probability `power`, between the means of `n_judged` and `n_baseline` runs whose
    ln values have stddev `spread`.

    >>> round(min_detectable_change(0.01, 1, 10, alpha=0.01, power=0.8), 3)
    3.649
    """
    if n_judged < 1 or n_baseline < 1:
        raise ValueError("the MDC needs at least one run on each side")
    z = NormalDist()
    k = z.inv_cdf(1 - alpha / 2) + z.inv_cdf(power)
    return 100.0 * math.expm1(k * spread * math.sqrt(1 / n_judged + 1 / n_baseline))


def bimodality_coefficient(values: Sequence[float]) -> float | None:
    """Sarle's sample bimodality coefficient, or None for fewer than 4 values or none
    spread. 5/9 is a uniform distribution's, 1/3 a normal one's; two clusters go to 1."""
    n = len(values)
    if n < 4:
        return None
    mean = _mean(values)
    m2 = math.fsum((v - mean) ** 2 for v in values) / n
    if m2 <= 0:
        return None
    m3 = math.fsum((v - mean) ** 3 for v in values) / n
    m4 = math.fsum((v - mean) ** 4 for v in values) / n
    g: float = m3 / m2**1.5 * math.sqrt(n * (n - 1)) / (n - 2)
    k = ((n + 1) * (m4 / m2**2 - 3) + 6) * (n - 1) / ((n - 2) * (n - 3))
    coefficient: float = (g * g + 1) / (k + 3 * (n - 1) ** 2 / ((n - 2) * (n - 3)))
    return coefficient


def estimate_band(
    groups: Mapping[str, Sequence[float]],
    *,
    n_judged: int = 1,
    n_baseline: int = 10,
    alpha: float = REGRESSION_ALPHA,
    power: float = POWER,
) -> NoiseBand | None:
    """The noise band of a series from its runs grouped by commit (or A/A batch).

    Args:
        groups: values of each commit's runs (one representative value per run).
        n_judged: runs whose mean is judged (an SLA's `window`).
        n_baseline: runs whose mean is the baseline (an SLA's `baseline_runs`).
        alpha: two-sided significance, `REGRESSION_ALPHA` by default.
        power: probability of detecting a change of the MDC.

    Returns:
        The band, or None with fewer than `MIN_DF` degrees of freedom.
    """
    pooled = pooled_log_spread(list(groups.values()))
    if pooled is None:
        return None
    spread, commits, runs = pooled
    shape = [
        r
        for g in groups.values()
        if len(kept := [v for v in g if v > 0 and math.isfinite(v)]) >= SHAPE_MIN_RUNS
        for r in _residuals(kept)
    ]
    bc = bimodality_coefficient(shape) if len(shape) >= SHAPE_MIN_VALUES else None
    return NoiseBand(
        spread_pct=100.0 * spread,
        mdc_pct=min_detectable_change(spread, n_judged, n_baseline, alpha=alpha, power=power),
        commits=commits,
        runs=runs,
        n_judged=n_judged,
        n_baseline=n_baseline,
        alpha=alpha,
        power=power,
        bimodality=bc,
        bimodal=bc is not None and bc > BIMODAL_AT,
    )
