"""The re-enqueue sweeper: traces the broker lost are sent again, dead ingests retried.

An upload commits its `queued` row before it sends the task, so a broker that is down
(or that lost its data in a restart) leaves a row no worker will ever see. A worker killed
mid-ingest leaves a `processing` row whose claim lapses after the time limit. Workers run
`sweep_traces` at start-up and periodically (`workers/sweeper.py`); it finds both kinds
and sends their ingest task again. Sending twice is harmless: `claim_trace` lets only one
worker load a trace, and a ready trace is skipped.

Public surface: `sweep_traces`, `SweepResult`.
"""

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from backend.core.config import Settings
from backend.core.queue import try_enqueue
from backend.core.task_names import INGEST_QUEUE, INGEST_TRACE
from backend.models import Trace, TraceStatus
from backend.services.traces import fail_abandoned, requeue_stale

log = logging.getLogger(__name__)
_BATCH = 500


@dataclass
class SweepResult:
    """What one sweep did, by trace id."""

    requeued: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    unsent: list[str] = field(default_factory=list)


def sweep_traces(*, engine: Engine, settings: Settings, now: datetime | None = None) -> SweepResult:
    """Re-send the ingest of stale `queued` traces and of `processing` ones whose worker died.

    Each stale row is first touched with a conditional UPDATE (on its old `updated_at`), so
    concurrent sweepers on several workers send each trace once per period, not once each.
    A `processing` trace that has used `max_ingest_attempts` claims is failed instead: its
    workers keep dying on it (out of memory, or past the hard time limit).

    Returns:
        The traces re-sent, failed, and those whose re-send met a broker still down.
    """
    now = now or datetime.now(UTC)
    queued_before = now - timedelta(seconds=settings.requeue_after_s)
    # A claim is treated as dead CLAIM_GRACE_S after it lapsed (its worker's hard time limit).
    lapsed = now - timedelta(seconds=settings.claim_grace_s)
    unclaimed_before = lapsed - timedelta(seconds=settings.ingest_time_limit_s)
    claim, updated = col(Trace.ingest_claimed_until), col(Trace.updated_at)
    stale = ((col(Trace.status) == TraceStatus.QUEUED) & (updated < queued_before)) | (
        (col(Trace.status) == TraceStatus.PROCESSING)
        # a row from before claims existed has none: judge it by its last update
        & ((claim < lapsed) | (claim.is_(None) & (updated < unclaimed_before)))
    )
    with Session(engine) as session:
        rows = session.exec(
            select(Trace.id, Trace.status, Trace.updated_at, Trace.ingest_attempts)
            .where(stale)
            .order_by(col(Trace.created_at))
            .limit(_BATCH)
        ).all()
    result = SweepResult()
    for trace_id, status, seen_at, attempts in rows:
        give_up = status == TraceStatus.PROCESSING and attempts >= settings.max_ingest_attempts
        moved = (
            fail_abandoned(engine, trace_id, seen_at=seen_at, now=now, attempts=attempts)
            if give_up
            else requeue_stale(engine, trace_id, seen_status=status, seen_at=seen_at, now=now)
        )
        if not moved:
            continue  # another sweeper, or a worker, changed it since we read it
        if give_up:
            result.failed.append(trace_id)
        elif try_enqueue(INGEST_TRACE, trace_id, queue=INGEST_QUEUE):
            result.requeued.append(trace_id)
        else:
            result.unsent.append(trace_id)
    if rows:
        log.info(
            "sweeper: %d re-sent, %d failed, %d not sent (broker down)",
            len(result.requeued),
            len(result.failed),
            len(result.unsent),
        )
    return result
