"""One series for the series page: its points over runs (with their run flags), its
change points and its noise band.

The SLAs over a series (their thresholds, first bad commits and accepted baselines) are
added by `backend.services.slas.board.add_series_slas`, one package up, so this package
never imports the SLA rules it sits below.

Public surface: `get_series`.
"""

from typing import Any

from sqlmodel import Session

from backend.models.metrics import (
    ChangePointPublic,
    Direction,
    MetricPoint,
    MetricRun,
    SeriesPoint,
    SeriesPublic,
)
from backend.services.series.changepoints import e_divisive
from backend.services.series.flags import run_flags, suspect_flags
from backend.services.series.history import (
    SeriesRow,
    count_skipped,
    read_history,
    representative,
)
from backend.services.series.noise_reads import read_noise_band
from backend.services.series.regimes import MIN_POINTS, REGRESSION_ALPHA


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
            flags=run_flags(r.run.environment),
            suspect=bool(suspect_flags(r.run.environment)),
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
    """A series oldest first, with its change points and noise band; no SLAs yet
    (`thresholds` empty)."""
    rows = read_history(
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
    return SeriesPublic(
        project=project,
        benchmark=benchmark,
        metric=metric,
        unit=last.unit if last else "",
        direction=direction,
        points=points,
        change_points=_change_points(points, direction),
        thresholds=[],
        noise=read_noise_band(
            session,
            project=project,
            benchmark=benchmark,
            metric=metric,
            branch=branch,
            environment=environment,
        ),
        skipped=count_skipped(
            session,
            MetricRun.project == project,
            MetricRun.benchmark == benchmark,
            MetricPoint.metric == metric,
            *([MetricRun.branch == branch] if branch is not None else []),
            join_points=True,
        ),
    )
