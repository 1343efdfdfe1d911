"""The SLA rules, pure: numbers and rows in, a `Judgement` out.

`evaluate` first reads what a rule needs from the database into an `Evidence`, then
`judge` applies the SLA's rule to it. Nothing here opens a session, so every rule is
tested on hand-computed numbers; the statistics and change points come from the pure
modules of `backend.services.series`.

Public surface: `Judgement`, `Evidence`, `judge`, `observe`, `absolute`, `relative`,
`determinism`, `regression`, `unstable`, `insufficient`.
"""

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from backend.models.metrics import Direction, MetricPoint, MetricRun
from backend.models.slas import Rule, Sla, Statistic, Verdict
from backend.services.series import (
    MIN_POINTS,
    REGRESSION_ALPHA,
    SeriesRow,
    describe_flags,
    mann_whitney_u,
    median,
    open_regression,
    percentile,
    point_stat,
    representative,
    streak_start,
    suspect_flags,
    welch_t_test,
)
from backend.services.slas.baselines import JudgedSeries, lower_is_better
from backend.services.slas.tolerance import Tolerance, resolve_tolerance

_OPS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le,
    "<": operator.lt,
    ">=": operator.ge,
    ">": operator.gt,
}


@dataclass(slots=True)
class Judgement:
    """One rule's answer: the verdict and the numbers it was reached with."""

    verdict: Verdict
    observed: float | None = None
    threshold: float | None = None
    baseline: float | None = None
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Evidence:
    """What the rules read from the database, gathered before any rule runs.

    Attributes:
        window: values of the SLA's last `window` runs on the run's branch, newest first
            (read only when `window` > 1).
        baseline: the good runs of the baseline branch, oldest first.
        left_out: the first run of a confirmed regression the baseline leaves out.
        baseline_hash: the hash of the newest run of the baseline branch.
        series: the run's branch since the accepted baseline, split into regimes.
        tolerance: the tolerance and where it came from; None: the SLA's own (or 0).
    """

    window: list[float] = field(default_factory=list)
    baseline: list[SeriesRow] = field(default_factory=list)
    left_out: SeriesRow | None = None
    baseline_hash: str | None = None
    series: JudgedSeries = field(default_factory=lambda: JudgedSeries([], [], []))
    tolerance: Tolerance | None = None


def _values_stat(values: Sequence[float], statistic: Statistic) -> float:
    if statistic == Statistic.LAST:
        return values[0]
    if statistic == Statistic.MEAN:
        return sum(values) / len(values)
    if statistic in (Statistic.MIN, Statistic.MAX):
        return min(values) if statistic == Statistic.MIN else max(values)
    return percentile(values, float(str(statistic)[1:]))


def observe(sla: Sla, point: MetricPoint, window: Sequence[float]) -> float | None:
    """The SLA's statistic over this run's samples, or over the values of its last N runs
    (`window`, newest first)."""
    if sla.window == 1:
        return point_stat(point, sla.statistic)
    return _values_stat(window, sla.statistic) if window else None


def _excluded(since: str | None, tolerance: Tolerance | None = None) -> dict[str, Any]:
    """Details every baseline rule gives: the regression left out of the baseline, and
    the tolerance used and its source."""
    out = tolerance.details() if tolerance is not None else {}
    return {**out, "excluded_since": since} if since is not None else out


def unstable(sla: Sla, run: MetricRun, point: MetricPoint | None) -> Judgement | None:
    """`skipped` for a run flagged throttled or contended when the SLA requires stable
    runs (None otherwise): its numbers are suspect, so it is not judged."""
    flags = suspect_flags(run.environment) if sla.require_stable else []
    if not flags:
        return None
    observed = point_stat(point, sla.statistic) if point is not None else None
    why = f"not judged: the run is flagged {describe_flags(flags)} and the SLA requires stable runs"
    return Judgement(Verdict.SKIPPED, observed, details={"skipped": why, "flags": flags})


def absolute(sla: Sla, observed: float | None) -> Judgement:
    """The observed value against a fixed threshold (`op`, `threshold`)."""
    if observed is None or sla.threshold is None:
        return Judgement(Verdict.NO_DATA, observed, sla.threshold)
    ok = _OPS[sla.op](observed, sla.threshold)
    return Judgement(Verdict.PASS if ok else Verdict.FAIL, observed, sla.threshold)


def insufficient(observed: float | None, tolerance: Tolerance) -> Judgement | None:
    """`insufficient_data` when the rule needs a tolerance and has none (None otherwise):
    never a verdict at 0 %."""
    if tolerance.missing is None:
        return None
    details = {**tolerance.details(), "insufficient_data": tolerance.missing}
    return Judgement(Verdict.INSUFFICIENT_DATA, observed, details=details)


def relative(
    sla: Sla,
    observed: float | None,
    baseline: Sequence[float],
    *,
    lower: bool,
    excluded_since: str | None = None,
    tolerance: Tolerance | None = None,
) -> Judgement:
    """No worse than the tolerance (`slas.tolerance`: the SLA's `tolerance_pct`, else the
    noise band's MDC) against the median of the baseline values, in the direction `lower`
    (lower is better) gives."""
    tolerance = tolerance or resolve_tolerance(sla, None)
    lacking = insufficient(observed, tolerance)
    if lacking is not None:
        return lacking
    details = _excluded(excluded_since, tolerance)
    median_of = median(baseline) if baseline else None
    if observed is None or median_of is None:
        return Judgement(Verdict.NO_DATA, observed, None, median_of, details)
    factor = 1 + tolerance.pct / 100 if lower else 1 - tolerance.pct / 100
    threshold = median_of * factor
    ok = observed <= threshold if lower else observed >= threshold
    verdict = Verdict.PASS if ok else Verdict.FAIL
    return Judgement(verdict, observed, threshold, median_of, details)


def determinism(run_hash: str | None, baseline_hash: str | None) -> Judgement:
    """The run's hash equals the newest baseline run's hash."""
    details = {"hash": run_hash, "baseline_hash": baseline_hash}
    if run_hash is None or baseline_hash is None:
        return Judgement(Verdict.NO_DATA, details=details)
    verdict = Verdict.PASS if run_hash == baseline_hash else Verdict.FAIL
    return Judgement(verdict, details=details)


def _is_worse(direction: str, shift_pct: float, tolerance_pct: float) -> bool:
    worse = shift_pct if direction == Direction.LOWER else -shift_pct
    return worse > tolerance_pct


def _sample_test(
    point: MetricPoint, baseline: Sequence[SeriesRow], tolerance_pct: float
) -> dict[str, Any]:
    """Mann-Whitney U (and Welch's t for reference) of this run's samples vs the baseline's."""
    pooled = [s for r in baseline for s in (r.point.samples or [])]
    current = point.samples or []
    if len(current) < 2 or len(pooled) < 2:
        return {}
    _, p_mw = mann_whitney_u(pooled, current)
    _, p_welch = welch_t_test(pooled, current)
    before, after = median(pooled), median(current)
    shift = 100.0 * (after - before) / abs(before) if before else 0.0
    regressed = p_mw < REGRESSION_ALPHA and _is_worse(point.direction, shift, tolerance_pct)
    return {
        "test": "mann_whitney_u",
        "p_value": p_mw,
        "welch_p_value": p_welch,
        "shift_pct": shift,
        "regressed": regressed,
    }


def _change_point_test(judged: JudgedSeries) -> dict[str, Any]:
    """E-divisive regimes of the series; regressed while the newest regime is worse than
    the last good one, from the change point where that regression began."""
    if len(judged.values) < MIN_POINTS:
        return {}
    start = open_regression(judged.regimes)
    if start is None or start.change is None:
        return {"test": "e_divisive", "regressed": False}
    return {
        "test": "e_divisive",
        "p_value": start.change.p_value,
        "shift_pct": start.change.shift_pct,
        "first_bad_commit": judged.rows[start.start].run.commit,
        "regressed": True,
    }


def _first_bad_commit(judged: JudgedSeries, run: MetricRun, baseline: float | None) -> str:
    """Where the regression this run is in began: the change point that opened it, or, too
    recent for a change point, the oldest of the runs before this one at its level."""
    start = open_regression(judged.regimes)
    if start is not None:
        return judged.rows[start.start].run.commit
    at = next((i for i, r in enumerate(judged.rows) if r.run.id == run.id), None)
    if at is None or baseline is None:
        return run.commit
    return judged.rows[streak_start(judged.values[: at + 1], baseline)].run.commit


def regression(
    sla: Sla,
    run: MetricRun,
    point: MetricPoint,
    baseline: Sequence[SeriesRow],
    series: JudgedSeries,
    *,
    excluded_since: str | None = None,
    tolerance: Tolerance | None = None,
) -> Judgement:
    """Noise-aware: a per-push sample test against the baseline runs, and change points
    of the run's branch (`series`); every failure names the commit where the regression
    began. A shift within the tolerance (`slas.tolerance`) is not a regression."""
    tolerance = tolerance or resolve_tolerance(sla, None)
    observed = point_stat(point, sla.statistic)
    lacking = insufficient(observed, tolerance)
    if lacking is not None:
        return lacking
    base_values = [v for r in baseline if (v := representative(r.point)) is not None]
    sample = _sample_test(point, baseline, tolerance.pct)
    tests = [t for t in (sample, _change_point_test(series)) if t]
    median_of = median(base_values) if base_values else None
    if not tests:
        return Judgement(
            Verdict.NO_DATA, observed, None, median_of, _excluded(excluded_since, tolerance)
        )
    failed = [t for t in tests if t["regressed"]]
    if failed:
        first_bad = _first_bad_commit(series, run, median_of)
        for t in failed:
            t["first_bad_commit"] = first_bad
    details = failed[0] if failed else tests[0]
    verdict = Verdict.FAIL if failed else Verdict.PASS
    extra = {**details, "tests": tests, **_excluded(excluded_since, tolerance)}
    return Judgement(verdict, observed, None, median_of, extra)


def judge(sla: Sla, run: MetricRun, point: MetricPoint | None, evidence: Evidence) -> Judgement:
    """Apply the SLA's rule to a run's point (None: the run lacks the SLA's metric)."""
    skipped = unstable(sla, run, point)
    if skipped is not None:
        return skipped
    if point is None:
        return Judgement(Verdict.NO_DATA)
    excluded_since = evidence.left_out.run.commit if evidence.left_out else None
    if sla.rule == Rule.ABSOLUTE:
        return absolute(sla, observe(sla, point, evidence.window))
    if sla.rule in (Rule.RELATIVE, Rule.NO_INCREASE):
        values = [
            v for r in evidence.baseline if (v := point_stat(r.point, sla.statistic)) is not None
        ]
        observed = observe(sla, point, evidence.window)
        lower = lower_is_better(sla, point)
        return relative(
            sla,
            observed,
            values,
            lower=lower,
            excluded_since=excluded_since,
            tolerance=evidence.tolerance,
        )
    if sla.rule == Rule.DETERMINISM:
        return determinism(point.hash, evidence.baseline_hash)
    if sla.rule == Rule.REGRESSION:
        return regression(
            sla,
            run,
            point,
            evidence.baseline,
            evidence.series,
            excluded_since=excluded_since,
            tolerance=evidence.tolerance,
        )
    raise ValueError(f"unknown SLA rule {sla.rule!r}")
