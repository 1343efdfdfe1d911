"""The SLA reads behind the pages: the wall-screen board, an SLA's latest evaluations, and
the SLAs laid over one series.

Public surface: `read_board`, `latest_evaluations`, `add_series_slas`.
"""

from typing import Any

from sqlmodel import Session, col, func, select

from backend.models.metrics import SeriesPublic, SeriesSla
from backend.models.slas import Rule, Sla, SlaEvaluation, SlaPublic, Verdict
from backend.services.slas.baselines import list_acceptances


def read_board(
    session: Session, *, project: str | None, branch: str | None, gpu: str | None, spark: int
) -> list[dict[str, Any]]:
    """Every SLA with its cached status and a sparkline, for the wall-screen board, and
    from its newest evaluation the baseline it was judged against (`last_baseline`) and,
    while that one fails, the first bad commit (`first_bad_commit`), as the CLI prints."""
    query = select(Sla).order_by(col(Sla.project), col(Sla.benchmark), col(Sla.name))
    if project:
        query = query.where(Sla.project == project)
    slas = [
        s
        for s in session.exec(query).all()
        if (not branch or s.branch in (None, branch))
        and (not gpu or (s.environment or {}).get("gpu_model") in (None, gpu))
    ]
    out = [SlaPublic.model_validate(s, from_attributes=True).model_dump(mode="json") for s in slas]
    latest = _latest_by_sla(session, [s.id for s in slas])
    for item in out:
        item["sparkline"] = item["sparkline"][-spark:] if spark else []
        evaluation = latest.get(item["id"])
        item["last_baseline"] = evaluation.baseline if evaluation else None
        failing = evaluation is not None and evaluation.verdict == Verdict.FAIL
        item["first_bad_commit"] = (
            evaluation.details.get("first_bad_commit") if evaluation and failing else None
        )
    return out


def _latest_by_sla(session: Session, sla_ids: list[str]) -> dict[str, SlaEvaluation]:
    """Each SLA's newest evaluation (the highest id: rows are only ever appended), in one
    query, so a board of hundreds of tiles shows baselines without a query per tile."""
    if not sla_ids:
        return {}
    newest = (
        select(func.max(SlaEvaluation.id))
        .where(col(SlaEvaluation.sla_id).in_(sla_ids))
        .group_by(col(SlaEvaluation.sla_id))
    )
    rows = session.exec(select(SlaEvaluation).where(col(SlaEvaluation.id).in_(newest))).all()
    return {r.sla_id: r for r in rows}


def latest_evaluations(session: Session, sla_id: str, limit: int) -> list[SlaEvaluation]:
    """An SLA's evaluation history, newest first."""
    query = (
        select(SlaEvaluation)
        .where(SlaEvaluation.sla_id == sla_id)
        .order_by(col(SlaEvaluation.created_at).desc(), col(SlaEvaluation.id).desc())
        .limit(limit)
    )
    return list(session.exec(query).all())


def _series_sla(session: Session, sla: Sla) -> SeriesSla:
    """An SLA with the first bad commit of its latest verdict, while that one fails."""
    latest = latest_evaluations(session, sla.id, 1)
    failing = latest and latest[0].verdict == Verdict.FAIL
    first_bad = latest[0].details.get("first_bad_commit") if failing else None
    return SeriesSla(
        id=sla.id, name=sla.name, rule=sla.rule, status=sla.status, first_bad_commit=first_bad
    )


def add_series_slas(session: Session, series: SeriesPublic) -> SeriesPublic:
    """The series with the SLAs over it: the thresholds of its absolute SLAs, each SLA's
    first bad commit, and their accepted baselines."""
    slas = session.exec(
        select(Sla)
        .where(
            Sla.project == series.project,
            Sla.benchmark == series.benchmark,
            Sla.metric == series.metric,
        )
        .order_by(col(Sla.name))
    ).all()
    acceptances = list_acceptances(
        session, project=series.project, benchmark=series.benchmark, metric=series.metric
    )
    return series.model_copy(
        update={
            "thresholds": [
                s.threshold for s in slas if s.rule == Rule.ABSOLUTE and s.threshold is not None
            ],
            "slas": [_series_sla(session, s) for s in slas],
            "acceptances": acceptances,
        }
    )
