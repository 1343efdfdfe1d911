"""Reads for the pages: recent runs with their verdicts, one series with its change points,
the SLA board with sparklines, and the filter facets.

Public surface: `list_runs`, `get_series`, `board`, `facets`.
"""

import logging
from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, not_
from sqlmodel import Session, col, func, select

from backend.models.metrics import (
    ChangePointPublic,
    Direction,
    MetricPoint,
    MetricPointPublic,
    MetricRun,
    MetricRunPublic,
    RunVerdictPublic,
    SeriesPoint,
    SeriesPublic,
    SeriesSla,
)
from backend.models.slas import Rule, Sla, SlaEvaluation, SlaPublic, Verdict
from backend.services.series.changepoints import e_divisive
from backend.services.series.history import SeriesRow, history, representative
from backend.services.series.regimes import MIN_POINTS
from backend.services.series.time_window import TimeWindow, within
from backend.services.slas.baselines import REGRESSION_ALPHA, list_acceptances
from backend.services.slas.evaluate import latest_evaluations

log = logging.getLogger(__name__)


def _in_window() -> ColumnElement[bool]:
    return within(MetricRun.timestamp, TimeWindow.current(), datetime.now(UTC))


def _skipped(session: Session, *where: Any, join_points: bool = False) -> int:
    """Runs matching `where` that reads leave out for their timestamp, logged when any."""
    query = select(func.count(col(MetricRun.id).distinct())).select_from(MetricRun)
    if join_points:
        query = query.join(MetricPoint, col(MetricPoint.run_id) == col(MetricRun.id))
    skipped = session.exec(query.where(*where, not_(_in_window()))).one()
    if skipped:
        log.warning("left out %d metric runs whose timestamp is outside the window", skipped)
    return skipped


def list_runs(
    session: Session, *, project: str | None, branch: str | None, limit: int, offset: int
) -> tuple[list[MetricRunPublic], int, int]:
    """Runs newest first, each with its points and the verdicts it received; with the total
    and the number of runs left out for a timestamp outside the window."""
    filters = [c == v for c, v in ((MetricRun.project, project), (MetricRun.branch, branch)) if v]
    query = select(MetricRun).where(*filters, _in_window())
    count = select(func.count()).select_from(MetricRun).where(*filters, _in_window())
    order = (col(MetricRun.timestamp).desc(), col(MetricRun.id).desc())
    runs = session.exec(query.order_by(*order).offset(offset).limit(limit)).all()
    ids = [r.id for r in runs]
    points: dict[int, list[MetricPointPublic]] = defaultdict(list)
    for p in session.exec(select(MetricPoint).where(col(MetricPoint.run_id).in_(ids))):
        points[p.run_id].append(MetricPointPublic.model_validate(p, from_attributes=True))
    verdicts: dict[int, list[RunVerdictPublic]] = defaultdict(list)
    evals = session.exec(
        select(SlaEvaluation, Sla.name, Sla.severity)
        .join(Sla, col(Sla.id) == col(SlaEvaluation.sla_id))
        .where(col(SlaEvaluation.run_id).in_(ids))
    )
    for e, name, severity in evals:
        assert e.run_id is not None
        verdicts[e.run_id].append(
            RunVerdictPublic(
                sla_id=e.sla_id,
                name=name,
                severity=severity,
                verdict=e.verdict,
                observed=e.observed,
                threshold=e.threshold,
            )
        )
    items = [
        MetricRunPublic.model_validate(
            {**r.model_dump(), "points": points[r.id or 0], "verdicts": verdicts[r.id or 0]}
        )
        for r in runs
    ]
    return items, session.exec(count).one(), _skipped(session, *filters)


def _series_points(rows: list[SeriesRow]) -> list[SeriesPoint]:
    return [
        SeriesPoint(
            run=r.run.id or 0,
            commit=r.run.commit,
            branch=r.run.branch,
            timestamp=r.run.timestamp,
            trace_id=r.run.trace_id,
            value=representative(r.point),
            p05=r.point.p05,
            p50=r.point.p50,
            p95=r.point.p95,
        )
        for r in rows
    ]


def _change_points(points: list[SeriesPoint], direction: Direction) -> list[ChangePointPublic]:
    """E-divisive at the significance SLA verdicts use, so both name the same commits."""
    values = [p.value for p in points if p.value is not None]
    if len(values) != len(points) or len(values) < MIN_POINTS:
        return []
    sign = 1 if direction == Direction.LOWER else -1
    return [
        ChangePointPublic(
            index=c.index,
            commit=points[c.index].commit,
            before=c.before,
            after=c.after,
            shift_pct=c.shift_pct,
            p_value=c.p_value,
            worse=sign * c.shift_pct > 0,
        )
        for c in e_divisive(values, alpha=REGRESSION_ALPHA)
    ]


def _series_sla(session: Session, sla: Sla) -> SeriesSla:
    """An SLA with the first bad commit of its latest verdict, while that one fails."""
    latest = latest_evaluations(session, sla.id, 1)
    failing = latest and latest[0].verdict == Verdict.FAIL
    first_bad = latest[0].details.get("first_bad_commit") if failing else None
    return SeriesSla(
        id=sla.id, name=sla.name, rule=sla.rule, status=sla.status, first_bad_commit=first_bad
    )


def get_series(
    session: Session,
    *,
    project: str,
    benchmark: str,
    metric: str,
    branch: str | None,
    environment: dict[str, Any] | None,
    limit: int,
) -> SeriesPublic:
    """A series oldest first, with its change points, the thresholds of absolute SLAs, the
    SLAs over it and their accepted baselines."""
    rows = history(
        session,
        project=project,
        benchmark=benchmark,
        metric=metric,
        branch=branch,
        environment=environment,
        limit=limit,
    )[::-1]
    points = _series_points(rows)
    last = rows[-1].point if rows else None
    direction = last.direction if last else Direction.LOWER
    slas = session.exec(
        select(Sla)
        .where(Sla.project == project, Sla.benchmark == benchmark, Sla.metric == metric)
        .order_by(col(Sla.name))
    ).all()
    return SeriesPublic(
        project=project,
        benchmark=benchmark,
        metric=metric,
        unit=last.unit if last else "",
        direction=direction,
        points=points,
        change_points=_change_points(points, direction),
        thresholds=[
            s.threshold for s in slas if s.rule == Rule.ABSOLUTE and s.threshold is not None
        ],
        slas=[_series_sla(session, s) for s in slas],
        acceptances=list_acceptances(session, project=project, benchmark=benchmark, metric=metric),
        skipped=_skipped(
            session,
            MetricRun.project == project,
            MetricRun.benchmark == benchmark,
            MetricPoint.metric == metric,
            *([MetricRun.branch == branch] if branch is not None else []),
            join_points=True,
        ),
    )


def board(
    session: Session, *, project: str | None, branch: str | None, gpu: str | None, spark: int
) -> list[dict[str, Any]]:
    """Every SLA with its cached status and a sparkline, for the wall-screen board."""
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
    for item in out:
        item["sparkline"] = item["sparkline"][-spark:] if spark else []
    return out


def facets(session: Session) -> dict[str, list[str]]:
    """Projects, branches and GPU models seen, for the board's filters."""
    projects = session.exec(select(MetricRun.project).distinct()).all()
    branches = session.exec(select(MetricRun.branch).distinct()).all()
    gpus = {
        str(env.get("gpu_model"))
        for env in session.exec(select(MetricRun.environment).limit(5000)).all()
        if isinstance(env, dict) and env.get("gpu_model")
    }
    return {
        "projects": sorted(set(projects)),
        "branches": sorted(b for b in set(branches) if b),
        "gpus": sorted(gpus),
    }
