"""Reads for the runs page: recent metric runs with their points and verdicts, and the
filter facets (projects, branches, GPU models seen).

Public surface: `list_runs`, `facets`.
"""

from collections import defaultdict

from sqlmodel import Session, col, func, select

from backend.models.metrics import (
    MetricPoint,
    MetricPointPublic,
    MetricRun,
    MetricRunPublic,
    RunVerdictPublic,
)
from backend.models.slas import Sla, SlaEvaluation
from backend.services.series import count_skipped, in_window, run_flags


def list_runs(
    session: Session, *, project: str | None, branch: str | None, limit: int, offset: int
) -> tuple[list[MetricRunPublic], int, int]:
    """Runs newest first, each with its points and the verdicts it received; with the total
    and the number of runs left out for a timestamp outside the window."""
    filters = [c == v for c, v in ((MetricRun.project, project), (MetricRun.branch, branch)) if v]
    query = select(MetricRun).where(*filters, in_window())
    count = select(func.count()).select_from(MetricRun).where(*filters, in_window())
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
            {
                **r.model_dump(),
                "flags": run_flags(r.environment),
                "points": points[r.id or 0],
                "verdicts": verdicts[r.id or 0],
            }
        )
        for r in runs
    ]
    return items, session.exec(count).one(), count_skipped(session, *filters)


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
