"""SLA evaluation: the verdict of each SLA a run touches, stored as history.

`evaluate_run` is called inside the push transaction, so the push response carries the
verdicts and a failed push leaves no evaluations behind. Each rule is one small function
that returns a `Judgement`; the statistics and change points come from pure modules.

Public surface: `evaluate_run`, `affected_slas`, `Judgement`, `REGRESSION_ALPHA`.
"""

import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlmodel import Session, col, select

from backend.models.metrics import Direction, MetricPoint, MetricRun
from backend.models.slas import (
    SPARKLINE_LENGTH,
    Rule,
    Sla,
    SlaEvaluation,
    SlaVerdict,
    Statistic,
    Verdict,
)
from backend.services.series.history import (
    SeriesRow,
    env_matches,
    history,
    point_stat,
    representative,
)
from backend.services.series.regimes import MIN_POINTS, open_regression, streak_start
from backend.services.series.statistics import mann_whitney_u, median, percentile, welch_t_test
from backend.services.slas.baselines import (
    REGRESSION_ALPHA,
    JudgedSeries,
    baseline_rows,
    judged_series,
    lower_is_better,
)

_OPS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le,
    "<": operator.lt,
    ">=": operator.ge,
    ">": operator.gt,
}


@dataclass(slots=True)
class Judgement:
    verdict: Verdict
    observed: float | None = None
    threshold: float | None = None
    baseline: float | None = None
    details: dict[str, Any] = field(default_factory=dict)


def _values_stat(values: list[float], statistic: Statistic) -> float:
    if statistic == Statistic.LAST:
        return values[0]
    if statistic == Statistic.MEAN:
        return sum(values) / len(values)
    if statistic in (Statistic.MIN, Statistic.MAX):
        return min(values) if statistic == Statistic.MIN else max(values)
    return percentile(values, float(str(statistic)[1:]))


def _observe(session: Session, sla: Sla, run: MetricRun, point: MetricPoint) -> float | None:
    """The SLA's statistic over this run's samples, or over the values of its last N runs."""
    if sla.window == 1:
        return point_stat(point, sla.statistic)
    rows = history(
        session,
        project=run.project,
        benchmark=run.benchmark,
        metric=sla.metric,
        branch=run.branch,
        environment=sla.environment,
        limit=sla.window,
    )
    values = [v for r in rows if (v := representative(r.point)) is not None]
    return _values_stat(values, sla.statistic) if values else None


def _baseline_rows(session: Session, sla: Sla, run: MetricRun, limit: int) -> list[Any]:
    return history(
        session,
        project=run.project,
        benchmark=run.benchmark,
        metric=sla.metric,
        branch=sla.baseline_branch,
        environment=sla.environment,
        exclude_run=run.id,
        limit=limit,
    )


def _excluded(left_out: SeriesRow | None) -> dict[str, Any]:
    return {"excluded_since": left_out.run.commit} if left_out else {}


def _absolute(session: Session, sla: Sla, run: MetricRun, point: MetricPoint) -> Judgement:
    observed = _observe(session, sla, run, point)
    if observed is None or sla.threshold is None:
        return Judgement(Verdict.NO_DATA, observed, sla.threshold)
    ok = _OPS[sla.op](observed, sla.threshold)
    return Judgement(Verdict.PASS if ok else Verdict.FAIL, observed, sla.threshold)


def _relative(session: Session, sla: Sla, run: MetricRun, point: MetricPoint) -> Judgement:
    """No worse than `tolerance_pct` against the baseline, in the metric's direction."""
    observed = _observe(session, sla, run, point)
    lower = lower_is_better(sla, point)
    rows, left_out = baseline_rows(session, sla, run, lower=lower)
    values = [v for r in rows if (v := point_stat(r.point, sla.statistic)) is not None]
    baseline = median(values) if values else None
    if observed is None or baseline is None:
        return Judgement(Verdict.NO_DATA, observed, None, baseline, _excluded(left_out))
    factor = 1 + sla.tolerance_pct / 100 if lower else 1 - sla.tolerance_pct / 100
    threshold = baseline * factor
    ok = observed <= threshold if lower else observed >= threshold
    verdict = Verdict.PASS if ok else Verdict.FAIL
    return Judgement(verdict, observed, threshold, baseline, _excluded(left_out))


def _determinism(session: Session, sla: Sla, run: MetricRun, point: MetricPoint) -> Judgement:
    """The run's hash equals the newest baseline run's hash."""
    rows = _baseline_rows(session, sla, run, 1)
    expected = rows[0].point.hash if rows else None
    details = {"hash": point.hash, "baseline_hash": expected}
    if point.hash is None or expected is None:
        return Judgement(Verdict.NO_DATA, details=details)
    verdict = Verdict.PASS if point.hash == expected else Verdict.FAIL
    return Judgement(verdict, details=details)


def _is_worse(direction: str, shift_pct: float, tolerance_pct: float) -> bool:
    worse = shift_pct if direction == Direction.LOWER else -shift_pct
    return worse > tolerance_pct


def _sample_test(sla: Sla, point: MetricPoint, baseline_rows: list[Any]) -> dict[str, Any]:
    """Mann-Whitney U (and Welch's t for reference) of this run's samples vs the baseline's."""
    pooled = [s for r in baseline_rows for s in (r.point.samples or [])]
    current = point.samples or []
    if len(current) < 2 or len(pooled) < 2:
        return {}
    _, p_mw = mann_whitney_u(pooled, current)
    _, p_welch = welch_t_test(pooled, current)
    before, after = median(pooled), median(current)
    shift = 100.0 * (after - before) / abs(before) if before else 0.0
    regressed = p_mw < REGRESSION_ALPHA and _is_worse(point.direction, shift, sla.tolerance_pct)
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


def _regression(session: Session, sla: Sla, run: MetricRun, point: MetricPoint) -> Judgement:
    """Noise-aware: a per-push sample test against the baseline, and change points; every
    failure names the commit where the regression began."""
    observed = point_stat(point, sla.statistic)
    lower = lower_is_better(sla, point)
    base_rows, left_out = baseline_rows(session, sla, run, lower=lower)
    base_values = [v for r in base_rows if (v := representative(r.point)) is not None]
    judged = judged_series(session, sla, branch=run.branch, lower=lower)
    tests = [t for t in (_sample_test(sla, point, base_rows), _change_point_test(judged)) if t]
    baseline = median(base_values) if base_values else None
    if not tests:
        return Judgement(Verdict.NO_DATA, observed, None, baseline, _excluded(left_out))
    failed = [t for t in tests if t["regressed"]]
    if failed:
        first_bad = _first_bad_commit(judged, run, baseline)
        for t in failed:
            t["first_bad_commit"] = first_bad
    details = failed[0] if failed else tests[0]
    verdict = Verdict.FAIL if failed else Verdict.PASS
    extra = {**details, "tests": tests, **_excluded(left_out)}
    return Judgement(verdict, observed, None, baseline, extra)


_RULES: dict[Rule, Callable[[Session, Sla, MetricRun, MetricPoint], Judgement]] = {
    Rule.ABSOLUTE: _absolute,
    Rule.RELATIVE: _relative,
    Rule.NO_INCREASE: _relative,
    Rule.DETERMINISM: _determinism,
    Rule.REGRESSION: _regression,
}


def affected_slas(session: Session, run: MetricRun) -> list[Sla]:
    """SLAs whose selector (project, benchmark, branch, environment) takes in this run."""
    rows = session.exec(
        select(Sla).where(Sla.project == run.project, Sla.benchmark == run.benchmark)
    ).all()
    return [
        s
        for s in rows
        if (s.branch is None or s.branch == run.branch)
        and env_matches(s.environment, run.environment)
    ]


def _record(session: Session, sla: Sla, run: MetricRun, judged: Judgement) -> SlaVerdict:
    previous = sla.status
    now = datetime.now(UTC)
    if previous != judged.verdict:
        sla.status, sla.status_changed_at = judged.verdict, now
    if judged.observed is not None:
        sla.sparkline = [*(sla.sparkline or [])[1 - SPARKLINE_LENGTH :], judged.observed]
    sla.last_observed, sla.last_threshold, sla.last_evaluated_at = (
        judged.observed,
        judged.threshold,
        now,
    )
    session.add(sla)
    session.add(
        SlaEvaluation(
            sla_id=sla.id,
            run_id=run.id,
            commit=run.commit,
            verdict=judged.verdict,
            observed=judged.observed,
            threshold=judged.threshold,
            baseline=judged.baseline,
            details=judged.details,
            created_at=now,
        )
    )
    return SlaVerdict(
        sla_id=sla.id,
        name=sla.name,
        severity=sla.severity,
        project=sla.project,
        benchmark=sla.benchmark,
        metric=sla.metric,
        rule=sla.rule,
        verdict=judged.verdict,
        observed=judged.observed,
        threshold=judged.threshold,
        baseline=judged.baseline,
        previous=previous,
        details=judged.details,
    )


def evaluate_run(
    session: Session,
    run: MetricRun,
    points: dict[str, MetricPoint],
    slas: list[Sla] | None = None,
) -> list[SlaVerdict]:
    """Judge every SLA this run touches, store the evaluations and update each SLA's status.

    Args:
        session: the push's session; nothing is committed here.
        run: a flushed run (it has an id).
        points: the run's points by metric name.
        slas: the SLAs this run touches, when the caller already has them.

    Returns:
        One verdict per affected SLA; an SLA whose metric the run lacks is `no_data`.
    """
    verdicts = []
    chosen = affected_slas(session, run) if slas is None else slas
    for sla in sorted(chosen, key=lambda s: s.name):
        point = points.get(sla.metric)
        judged = (
            Judgement(Verdict.NO_DATA)
            if point is None
            else _RULES[sla.rule](session, sla, run, point)
        )
        verdicts.append(_record(session, sla, run, judged))
    return verdicts


def latest_evaluations(session: Session, sla_id: str, limit: int) -> list[SlaEvaluation]:
    """An SLA's evaluation history, newest first."""
    query = (
        select(SlaEvaluation)
        .where(SlaEvaluation.sla_id == sla_id)
        .order_by(col(SlaEvaluation.created_at).desc(), col(SlaEvaluation.id).desc())
        .limit(limit)
    )
    return list(session.exec(query).all())
