"""SLA evaluation: the verdict of each SLA a run touches, stored as history.

`evaluate_run` is called inside the push transaction, so the push response carries the
verdicts and a failed push leaves no evaluations behind. For each SLA it first reads what
the rule needs (`gather`: history, baseline and series rows) and then lets the pure rule
decide (`rules.judge`).

Public surface: `evaluate_run`, `affected_slas`, `gather`.
"""

from datetime import UTC, datetime

from sqlmodel import Session, select

from backend.models.metrics import MetricPoint, MetricRun
from backend.models.slas import SPARKLINE_LENGTH, Rule, Sla, SlaEvaluation, SlaVerdict, Verdict
from backend.services.series import (
    SeriesRow,
    describe_flags,
    env_matches,
    read_history,
    representative,
)
from backend.services.slas.baselines import baseline_rows, judged_series, lower_is_better
from backend.services.slas.rules import Evidence, Judgement, judge, unstable
from backend.services.slas.tolerance import read_tolerance
from backend.services.slas.verdicts import verdict_of


def _history(
    session: Session, sla: Sla, run: MetricRun, *, branch: str, limit: int, exclude: bool
) -> list[SeriesRow]:
    """The newest `limit` rows of the SLA's series on `branch` (without this run if
    `exclude`; without flagged runs if the SLA requires stable runs)."""
    return read_history(
        session,
        project=run.project,
        benchmark=run.benchmark,
        metric=sla.metric,
        branch=branch,
        environment=sla.environment,
        exclude_run=run.id if exclude else None,
        stable_only=sla.require_stable,
        limit=limit,
    )


def _window(session: Session, sla: Sla, run: MetricRun) -> list[float]:
    """The values of the SLA's last `window` runs on the run's branch (this one included),
    newest first; nothing is read for a window of one run."""
    if sla.window == 1:
        return []
    rows = _history(session, sla, run, branch=run.branch, limit=sla.window, exclude=False)
    return [v for r in rows if (v := representative(r.point)) is not None]


def gather(session: Session, sla: Sla, run: MetricRun, point: MetricPoint) -> Evidence:
    """Read what the SLA's rule needs to judge this run's point, and nothing more."""
    if sla.rule == Rule.ABSOLUTE:
        return Evidence(window=_window(session, sla, run))
    if sla.rule == Rule.DETERMINISM:
        rows = _history(session, sla, run, branch=sla.baseline_branch, limit=1, exclude=True)
        return Evidence(baseline_hash=rows[0].point.hash if rows else None)
    lower = lower_is_better(sla, point)
    tolerance = read_tolerance(session, sla)
    if tolerance.missing is not None:  # nothing to judge by: the rule answers insufficient
        return Evidence(tolerance=tolerance)
    baseline, left_out = baseline_rows(session, sla, run, lower=lower, tolerance=tolerance)
    if sla.rule == Rule.REGRESSION:
        series = judged_series(session, sla, branch=run.branch, lower=lower, tolerance=tolerance)
        return Evidence(baseline=baseline, left_out=left_out, series=series, tolerance=tolerance)
    window = _window(session, sla, run)  # relative and no_increase
    return Evidence(window=window, baseline=baseline, left_out=left_out, tolerance=tolerance)


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


def _cache_status(sla: Sla, judged: Judgement, now: datetime) -> None:
    """Update the status the board reads; a skipped run leaves it as it was and says why,
    and `insufficient_data` is a status of its own with the missing data as the reason."""
    sla.last_evaluated_at = now
    if judged.verdict == Verdict.SKIPPED:
        sla.last_skip_reason = describe_flags(judged.details.get("flags") or [])[:512]
        return
    if sla.status != judged.verdict:
        sla.status, sla.status_changed_at = judged.verdict, now
    if judged.observed is not None:
        sla.sparkline = [*(sla.sparkline or [])[1 - SPARKLINE_LENGTH :], judged.observed]
    sla.last_observed, sla.last_threshold = judged.observed, judged.threshold
    sla.last_skip_reason = judged.details.get("insufficient_data")
    if sla.last_skip_reason is not None:
        sla.last_skip_reason = str(sla.last_skip_reason)[:512]


def _record(session: Session, sla: Sla, run: MetricRun, judged: Judgement) -> SlaVerdict:
    previous = sla.status
    now = datetime.now(UTC)
    _cache_status(sla, judged, now)
    session.add(sla)
    evaluation = SlaEvaluation(
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
    session.add(evaluation)
    return verdict_of(sla, evaluation, previous=previous, run=run)


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
        One verdict per affected SLA; an SLA whose metric the run lacks is `no_data`, and
        one that requires stable runs is `skipped` for a run flagged throttled or contended.
    """
    verdicts = []
    chosen = affected_slas(session, run) if slas is None else slas
    for sla in sorted(chosen, key=lambda s: s.name):
        point = points.get(sla.metric)
        judged = unstable(sla, run, point)
        if judged is None:
            evidence = Evidence() if point is None else gather(session, sla, run, point)
            judged = judge(sla, run, point, evidence)
        verdicts.append(_record(session, sla, run, judged))
    return verdicts
