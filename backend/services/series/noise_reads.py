"""The noise band of a series, read from its stored runs (`series.noise` does the maths).

Runs are grouped by A/A batch (`environment.aa_group`, written by repeated benchmark
runs) or else by commit; runs without either, and runs flagged throttled or contended,
are left out. The band is learned over every branch: noise is a property of the
benchmark and the machine (the environment selector), not of a branch.

Every answer counts what it stood on (`NoiseCensus`): the A/A runs (runs of a batch or
commit that has two or more), how many were usable, which were left out and for which
flag, and how many usable runs a band needs, so "no band" always says what is missing.

Public surface: `NOISE_HISTORY`, `NoiseCensus`, `noise_groups`, `noise_census`,
`series_band`, `read_noise_band`.
"""

import math
from dataclasses import dataclass, field
from typing import Any

from sqlmodel import Session

from backend.models.metrics import NoiseBandPublic
from backend.services.series.flags import describe_flags, suspect_flags
from backend.services.series.history import SeriesRow, read_history, representative
from backend.services.series.noise import MIN_DF, POWER, NoiseBand, estimate_band
from backend.services.series.regimes import REGRESSION_ALPHA
from backend.services.series.statistics import median

NOISE_HISTORY = 500  # newest runs the band is learned from


LEFT_OUT_SHOWN = 20  # left-out runs listed by name in an answer (all are counted)


@dataclass(frozen=True, slots=True)
class NoiseCensus:
    """The A/A runs a band was (or would be) learned from: used, left out, and needed."""

    total: int = 0  # runs of batches or commits with two runs or more
    usable: int = 0  # of those, unflagged
    needed: int = MIN_DF + 1  # usable runs the band needs, given how they group
    left_out: list[dict[str, Any]] = field(default_factory=list)  # newest first, with flags

    def missing(self) -> str:
        """What stands between the series and a band, in one line."""
        left = self.total - self.usable
        kinds = sorted({r["flags"] for r in self.left_out})
        flagged = f" ({left} flagged: {'; '.join(kinds[:3])})" if left else ""
        return (
            f"{self.usable} of {self.total} A/A runs usable{flagged}; need {self.needed} "
            "(perfdash bench run NAME --repeat 5, or a spec's aa_repeats)"
        )


def _key(row: SeriesRow) -> str:
    return str(row.run.environment.get("aa_group") or "") or row.run.commit


def noise_groups(rows: list[SeriesRow]) -> dict[str, list[float]]:
    """Each A/A batch's (or commit's) representative values."""
    groups: dict[str, list[float]] = {}
    for r in rows:
        key = _key(r)
        value = representative(r.point)
        if key and value is not None:
            groups.setdefault(key, []).append(value)
    return groups


def noise_census(rows: list[SeriesRow]) -> tuple[dict[str, list[float]], NoiseCensus]:
    """The usable runs' groups, and the census of every A/A run among `rows` (flagged ones
    too): a band needs `MIN_DF` degrees of freedom, usable runs minus their groups."""
    sizes: dict[str, int] = {}
    for r in rows:
        sizes[_key(r)] = sizes.get(_key(r), 0) + 1
    aa = [r for r in rows if _key(r) and sizes[_key(r)] >= 2]
    flagged = [(r, f) for r in aa if (f := suspect_flags(r.run.environment))]
    bad = {id(r) for r, _ in flagged}
    groups = noise_groups([r for r in aa if id(r) not in bad])
    usable = sum(len(g) for g in groups.values())
    df = sum(len(g) - 1 for g in groups.values())
    needed = usable + MIN_DF - df if groups and df < MIN_DF else max(usable, MIN_DF + 1)
    left_out = [
        {"id": r.run.id, "run_id": r.run.run_id, "commit": r.run.commit, "flags": describe_flags(f)}
        for r, f in flagged[:LEFT_OUT_SHOWN]
    ]
    census = NoiseCensus(total=len(aa), usable=usable, needed=needed, left_out=left_out)
    return groups, census


def series_band(
    session: Session,
    *,
    project: str,
    benchmark: str,
    metric: str,
    environment: dict[str, Any] | None,
    n_judged: int,
    n_baseline: int,
) -> tuple[NoiseBand | None, NoiseCensus]:
    """The band of a series (every branch, stable runs only; None without enough A/A
    runs) and the census of the A/A runs it was learned from."""
    rows = read_history(
        session,
        project=project,
        benchmark=benchmark,
        metric=metric,
        environment=environment,
        limit=NOISE_HISTORY,
    )
    groups, census = noise_census(rows)
    return estimate_band(groups, n_judged=n_judged, n_baseline=n_baseline), census


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
    band, census = series_band(
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
        aa_runs=census.total,
        runs_usable=census.usable,
        runs_left_out=census.total - census.usable,
        runs_needed=census.needed,
        left_out=census.left_out,
    )
    if band is None:
        out.reason = f"no noise band yet: {census.missing()}"
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
