"""The tolerance an SLA's rule allows, and where it came from.

An SLA may set `tolerance_pct`; a `regression` or `relative` rule that leaves it unset
(None) uses the minimum detectable change of the series' noise band instead: the
smallest change its A/A runs let a rule tell from noise, for the SLA's `window` runs
against its `baseline_runs`. Without a band yet there is no tolerance at all: the rule
answers `insufficient_data` with what is missing ("2 of 5 A/A runs usable; need 4"),
never a verdict at 0 % (issue #37: two `fail`s on pure A/A noise). Verdict details carry
the answer (`tolerance_pct`, `tolerance_source`, `noise`), so a reader sees which number
judged the run.

Public surface: `Tolerance`, `resolve_tolerance` (pure), `read_tolerance`.
"""

from dataclasses import dataclass, field
from typing import Any

from sqlmodel import Session

from backend.models.slas import Rule, Sla
from backend.services.series import NoiseBand, NoiseCensus, series_band

BAND_RULES = (Rule.REGRESSION, Rule.RELATIVE)


@dataclass(frozen=True, slots=True)
class Tolerance:
    """How much worse than the baseline a run may be, in percent, and why that much."""

    pct: float = 0.0
    # "sla": set on the SLA; "noise_band": the MDC; "none": the rule takes no tolerance;
    # "insufficient": the rule needs one and has none yet (`missing` says what is lacking).
    source: str = "sla"
    noise: dict[str, Any] = field(default_factory=dict)
    missing: str | None = None

    def details(self) -> dict[str, Any]:
        out: dict[str, Any] = {"tolerance_pct": self.pct, "tolerance_source": self.source}
        return {**out, "noise": self.noise} if self.noise else out


def resolve_tolerance(
    sla: Sla, band: NoiseBand | None, census: NoiseCensus | None = None
) -> Tolerance:
    """The SLA's own tolerance, else its noise band's MDC (regression and relative rules),
    else, for those rules, none: `insufficient` with what is missing."""
    if sla.tolerance_pct is not None:
        return Tolerance(sla.tolerance_pct, "sla")
    if sla.rule not in BAND_RULES:
        return Tolerance(0.0, "none")
    if band is None:
        lacking = (census or NoiseCensus()).missing()
        why = f"no tolerance_pct and no noise band yet: {lacking}"
        return Tolerance(0.0, "insufficient", missing=why)
    noise = {
        "spread_pct": band.spread_pct,
        "mdc_pct": band.mdc_pct,
        "commits": band.commits,
        "runs": band.runs,
        "n_judged": band.n_judged,
        "n_baseline": band.n_baseline,
        "alpha": band.alpha,
        "power": band.power,
        "bimodal": band.bimodal,
    }
    return Tolerance(band.mdc_pct, "noise_band", noise)


def read_tolerance(session: Session, sla: Sla) -> Tolerance:
    """`resolve_tolerance` with the band read only when the SLA needs it."""
    if sla.tolerance_pct is not None or sla.rule not in BAND_RULES:
        return resolve_tolerance(sla, None)
    band, census = series_band(
        session,
        project=sla.project,
        benchmark=sla.benchmark,
        metric=sla.metric,
        environment=sla.environment,
        n_judged=sla.window if sla.rule == Rule.RELATIVE else 1,
        n_baseline=sla.baseline_runs,
    )
    return resolve_tolerance(sla, band, census)
