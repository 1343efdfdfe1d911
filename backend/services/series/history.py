"""Series reads: the points of one metric of one benchmark over runs, newest first.

SLA evaluation (baselines, windows, change points) and the series page read history
through here, so "which runs belong to a series" is decided in one place.

Public surface: `SeriesRow`, `read_history`, `env_matches`, `representative`, `point_stat`,
`in_window`, `count_skipped`.
"""

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, not_
from sqlmodel import Session, and_, col, func, or_, select

from backend.models.metrics import MetricPoint, MetricRun
from backend.models.slas import Statistic
from backend.services.series.flags import suspect_flags
from backend.services.series.time_window import TimeWindow, within

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SeriesRow:
    run: MetricRun
    point: MetricPoint


def env_matches(selector: dict[str, Any] | None, environment: dict[str, Any]) -> bool:
    """True when every key of the selector has the same value (as text) in the environment.

    >>> env_matches({"gpu_model": "H200"}, {"gpu_model": "H200", "driver": "560"})
    True
    >>> env_matches({"gpu_model": "H200"}, {"gpu_model": "A100"})
    False
    """
    return all(str(environment.get(k)) == str(v) for k, v in (selector or {}).items())


def representative(point: MetricPoint) -> float | None:
    """The one number a run contributes to a series: its median, or its value."""
    return point.p50 if point.p50 is not None else point.value


def point_stat(point: MetricPoint, statistic: Statistic) -> float | None:
    """One statistic of a run's point (`last` is its last sample)."""
    if statistic == Statistic.LAST:
        return point.samples[-1] if point.samples else point.value
    value: float | None = getattr(point, str(statistic))
    return value


def in_window() -> ColumnElement[bool]:
    """A SQL condition: the run's timestamp lies in the settings' window (what reads keep)."""
    return within(MetricRun.timestamp, TimeWindow.current(), datetime.now(UTC))


def count_skipped(session: Session, *where: Any, join_points: bool = False) -> int:
    """Runs matching `where` that reads leave out for their timestamp, logged when any."""
    query = select(func.count(col(MetricRun.id).distinct())).select_from(MetricRun)
    if join_points:
        query = query.join(MetricPoint, col(MetricPoint.run_id) == col(MetricRun.id))
    skipped = session.exec(query.where(*where, not_(in_window()))).one()
    if skipped:
        log.warning("left out %d metric runs whose timestamp is outside the window", skipped)
    return skipped


def read_history(
    session: Session,
    *,
    project: str,
    benchmark: str,
    metric: str,
    branch: str | None = None,
    environment: dict[str, Any] | None = None,
    exclude_run: int | None = None,
    since: MetricRun | None = None,
    stable_only: bool = False,
    limit: int = 100,
) -> list[SeriesRow]:
    """The newest `limit` points of a series, newest first, optionally on one branch.

    Args:
        session: an open session.
        project: the series' project.
        benchmark: the series' benchmark.
        metric: the series' metric.
        branch: only runs on this branch; None for every branch.
        environment: only runs whose environment matches this selector.
        exclude_run: leave this run out (the run being judged against its baseline).
        since: only this run and the runs after it (an accepted baseline's first run).
        stable_only: leave out runs flagged throttled or contended (`series.flags`).
        limit: at most this many rows.

    Runs whose timestamp is outside the settings' window are left out: one that cannot
    even be read back (year 10000) would otherwise fail every read of the series.
    """
    query = (
        select(MetricRun, MetricPoint)
        .join(MetricPoint, col(MetricPoint.run_id) == col(MetricRun.id))
        .where(
            MetricRun.project == project,
            MetricRun.benchmark == benchmark,
            MetricPoint.metric == metric,
            in_window(),
        )
        .order_by(col(MetricRun.timestamp).desc(), col(MetricRun.id).desc())
    )
    if branch is not None:
        query = query.where(MetricRun.branch == branch)
    if exclude_run is not None:
        query = query.where(MetricRun.id != exclude_run)
    if since is not None:
        query = query.where(
            or_(
                col(MetricRun.timestamp) > since.timestamp,
                and_(MetricRun.timestamp == since.timestamp, col(MetricRun.id) >= since.id),
            )
        )
    # The environment is JSON, so it is filtered here; over-fetch so `limit` still holds.
    fetch = limit if not (environment or stable_only) else limit * 5
    rows: Sequence[tuple[MetricRun, MetricPoint]] = session.exec(query.limit(fetch)).all()
    out = [
        SeriesRow(r, p)
        for r, p in rows
        if env_matches(environment, r.environment)
        and not (stable_only and suspect_flags(r.environment))
    ]
    return out[:limit]
