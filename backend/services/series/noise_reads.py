"""The noise band of a series, read from its stored runs (`series.noise` does the maths).

Runs are grouped by A/A batch (`environment.aa_group`, written by repeated benchmark
runs) or else by commit; runs without either, and runs flagged throttled or contended,
are left out. The band is learned over every branch: noise is a property of the
benchmark and the machine (the environment selector), not of a branch.

Public surface: `NOISE_HISTORY`, `noise_groups`, `series_band`, `read_noise_band`.
"""

import math
from typing import Any

from sqlmodel import Session

from backend.models.metrics import NoiseBandPublic
from backend.services.series.history import SeriesRow, read_history, representative
from backend.services.series.noise import POWER, NoiseBand, estimate_band
from backend.services.series.regimes import REGRESSION_ALPHA
from backend.services.series.statistics import median

NOISE_HISTORY = 500  # newest runs the band is learned from


def noise_groups(rows: list[SeriesRow]) -> dict[str, list[float]]:
    """Each A/A batch's (or commit's) representative values."""
    groups: dict[str, list[float]] = {}
    for r in rows:
        key = str(r.run.environment.get("aa_group") or "") or r.run.commit
        value = representative(r.point)
        if key and value is not None:
            groups.setdefault(key, []).append(value)
    return groups


def series_band(
    session: Session,
    *,
    project: str,
    benchmark: str,
    metric: str,
    environment: dict[str, Any] | None,
    n_judged: int,
    n_baseline: int,
) -> NoiseBand | None:
    """The band of a series (every branch, stable runs only), or None without enough A/A
    runs."""
    rows = read_history(
        session,
        project=project,
        benchmark=benchmark,
        metric=metric,
        environment=environment,
        stable_only=True,
        limit=NOISE_HISTORY,
    )
    return estimate_band(noise_groups(rows), n_judged=n_judged, n_baseline=n_baseline)


def read_noise_band(
    session: Session,
    *,
    project: str,
    benchmark: str,
    metric: str,
    branch: str | None,
    environment: dict[str, Any] | None,
    n_judged: int = 1,
    n_baseline: int = 10,
) -> NoiseBandPublic:
    """The band for the API and the series page, centred on the median of the newest
    `n_baseline` stable runs of the series (on `branch` when given)."""
    band = series_band(
        session,
        project=project,
        benchmark=benchmark,
        metric=metric,
        environment=environment,
        n_judged=n_judged,
        n_baseline=n_baseline,
    )
    out = NoiseBandPublic(
        project=project,
        benchmark=benchmark,
        metric=metric,
        n_judged=n_judged,
        n_baseline=n_baseline,
        alpha=REGRESSION_ALPHA,
        power=POWER,
    )
    if band is None:
        out.reason = (
            "not enough A/A runs: the band needs repeated runs of one commit "
            "(perfdash bench run NAME --repeat 5, or a spec's aa_repeats)"
        )
        return out
    recent = read_history(
        session,
        project=project,
        benchmark=benchmark,
        metric=metric,
        branch=branch,
        environment=environment,
        stable_only=True,
        limit=n_baseline,
    )
    values = [v for r in recent if (v := representative(r.point)) is not None]
    center = median(values) if values else None
    factor = math.log1p(band.mdc_pct / 100)
    return out.model_copy(
        update={
            "spread_pct": band.spread_pct,
            "mdc_pct": band.mdc_pct,
            "commits": band.commits,
            "runs": band.runs,
            "bimodality": band.bimodality,
            "bimodal": band.bimodal,
            "center": center,
            "low": center * math.exp(-factor) if center is not None else None,
            "high": center * math.exp(factor) if center is not None else None,
        }
    )
