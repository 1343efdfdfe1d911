"""An SLA's verdict on a push, built from the SLA and its stored evaluation.

A first push judges and stores the evaluation; a retried push reads the stored ones back.
Both answer with the same `SlaVerdict`, built here only.

Public surface: `verdict_of`, `stored_verdicts`.
"""

from sqlmodel import Session, col, select

from backend.models.metrics import MetricRun
from backend.models.slas import Sla, SlaEvaluation, SlaVerdict, Verdict
from backend.services.series import run_flags


def verdict_of(
    sla: Sla, evaluation: SlaEvaluation, *, previous: Verdict | None, run: MetricRun
) -> SlaVerdict:
    """The verdict an evaluation of `sla` gives, with the SLA's status before it and the
    run's flags."""
    return SlaVerdict(
        sla_id=sla.id,
        name=sla.name,
        severity=sla.severity,
        project=sla.project,
        benchmark=sla.benchmark,
        metric=sla.metric,
        rule=sla.rule,
        verdict=evaluation.verdict,
        observed=evaluation.observed,
        threshold=evaluation.threshold,
        baseline=evaluation.baseline,
        previous=previous,
        details=evaluation.details,
        flags=run_flags(run.environment),
    )


def stored_verdicts(session: Session, run: MetricRun) -> list[SlaVerdict]:
    """The verdicts given when this run was first pushed (a retry gets the same answer).

    `previous` is the verdict itself, so a retry is never seen as a status change.
    """
    rows = session.exec(
        select(SlaEvaluation, Sla)
        .join(Sla, col(Sla.id) == col(SlaEvaluation.sla_id))
        .where(SlaEvaluation.run_id == run.id)
        .order_by(col(Sla.name))
    ).all()
    return [verdict_of(s, e, previous=e.verdict, run=run) for e, s in rows]
