"""Every status change of a trace, and the one table that says which changes are allowed.

An upload creates its trace `queued`; a worker claims it (`processing`, with a lease) and
either loads it (`ready`) or fails it. A worker that dies leaves a `processing` row whose
lease lapses: the sweeper queues it again, or fails it after too many attempts. A newer
parser, or a redelivered message, claims a `ready` or `failed` trace again (a re-ingest).

The functions below are the only code that writes `traces.status`. Each checks its change
against `ALLOWED` before any SQL runs, so a change the table lacks is refused
(`IllegalTransitionError`). Races are settled in SQL, not here: a claim is conditional on
the lease, a sweep on the row's `updated_at`.

Public surface: `ALLOWED`, `INITIAL`, `IllegalTransitionError`, `check_transition`,
`claim_trace`, `mark_ready`, `mark_failed`, `requeue_or_fail`, `requeue_stale`,
`fail_abandoned`.
"""

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, Final

from sqlalchemy import inspect, or_, select, update
from sqlalchemy.engine import Connection, Engine
from sqlmodel import col

from backend.core.clock import utc_now
from backend.models import Trace, TraceStatus

QUEUED, PROCESSING = TraceStatus.QUEUED, TraceStatus.PROCESSING
READY, FAILED = TraceStatus.READY, TraceStatus.FAILED

#: The status of a new trace (an upload).
INITIAL: Final = QUEUED
#: From each status, the statuses a trace may move to, and who moves it.
ALLOWED: Final[Mapping[str, frozenset[TraceStatus]]] = {
    # claimed by a worker (`claim_trace`); re-sent by the sweeper (`requeue_stale`)
    QUEUED: frozenset({PROCESSING, QUEUED}),
    # loaded (`mark_ready`); failed (`mark_failed`, `fail_abandoned`, `requeue_or_fail`);
    # disk full or worker dead (`requeue_or_fail`, `requeue_stale`); lapsed lease taken over
    PROCESSING: frozenset({READY, FAILED, QUEUED, PROCESSING}),
    # a re-ingest: a newer parser, or a redelivered message (`claim_trace`)
    READY: frozenset({PROCESSING}),
    FAILED: frozenset({PROCESSING}),
}
_ERROR_CHARS = 4000


class IllegalTransitionError(RuntimeError):
    """A status change that `ALLOWED` does not list: a bug in the caller, not bad input."""


def check_transition(current: str, target: TraceStatus) -> None:
    """Refuse a change from `current` to `target` that the table does not allow.

    Raises:
        IllegalTransitionError: naming the change, e.g. `queued -> ready` (a trace is
            never ready without a worker having claimed it).
    """
    # Keyed by text: a status read from a row as plain text finds its entry too.
    if target not in ALLOWED.get(current, frozenset()):
        raise IllegalTransitionError(f"trace status {current} -> {target} is not allowed")


def claim_trace(engine: Engine, trace_id: str, *, lease_s: int) -> bool:
    """Mark the trace `processing` for this worker unless another worker holds it.

    A claim is held for `lease_s` (the task's hard time limit, past which no worker can
    still be running it) and released when the trace is ready or failed. One conditional
    UPDATE, so two workers given the same trace (a redelivered message, a sweeper re-send)
    never both load it: that would double its events. Any status may be claimed: the lease,
    not the status, says whether someone else is loading it.

    Returns:
        Whether this caller now owns the ingest.
    """
    for status in TraceStatus:
        check_transition(status, PROCESSING)
    now = utc_now()
    claimed_until = col(Trace.ingest_claimed_until)
    with engine.begin() as conn:
        claimed = conn.execute(
            update(Trace)
            .where(col(Trace.id) == trace_id, or_(claimed_until.is_(None), claimed_until < now))
            .values(
                status=PROCESSING,
                error=None,
                progress=None,
                ingest_attempts=col(Trace.ingest_attempts) + 1,
                ingest_claimed_until=now + timedelta(seconds=lease_s),
                updated_at=now,
            )
        )
    return claimed.rowcount == 1


def mark_ready(conn: Connection, trace_id: str, loaded: Mapping[str, Any]) -> None:
    """Mark a claimed trace `ready` with what its load learnt (format, versions, counts,
    summary...), in the caller's load transaction, and release its claim."""
    check_transition(PROCESSING, READY)
    conn.execute(
        update(Trace)
        .where(col(Trace.id) == trace_id)
        .values(
            **loaded,
            **_event_total(conn, loaded),
            status=READY,
            error=None,
            progress=None,
            ingest_claimed_until=None,
            updated_at=utc_now(),
        )
    )


def _event_total(conn: Connection, loaded: Mapping[str, Any]) -> dict[str, int]:
    """`event_total` for the row, unless the table predates it: `perfdash db upgrade`
    re-ingests at revision 0014, and migration 0020 fills the column from the counts."""
    if "event_total" not in {c["name"] for c in inspect(conn).get_columns("traces")}:
        return {}
    return {"event_total": sum(loaded.get("event_counts", {}).values())}


def mark_failed(engine: Engine, trace_id: str, message: str) -> None:
    """Fail a claimed trace with a message for the person who uploaded it."""
    check_transition(PROCESSING, FAILED)
    with engine.begin() as conn:
        _release(conn, trace_id, FAILED, message)


def requeue_or_fail(
    engine: Engine, trace_id: str, reason: str, *, max_attempts: int
) -> TraceStatus:
    """Queue a claimed trace again after a fault of the server (its disk is full): the
    sweeper re-sends it later; once it has had `max_attempts` claims, fail it.

    Returns:
        The status it now has: `queued`, or `failed`.
    """
    check_transition(PROCESSING, QUEUED)
    check_transition(PROCESSING, FAILED)
    with engine.begin() as conn:
        attempts = conn.execute(
            select(col(Trace.ingest_attempts)).where(col(Trace.id) == trace_id)
        ).scalar_one_or_none()
        if (attempts or 0) >= max_attempts:
            status, message = FAILED, f"{reason}; gave up after {attempts} attempts"
        else:
            status, message = QUEUED, f"{reason}; the ingest will be retried"
        _release(conn, trace_id, status, message)
    return status


def requeue_stale(
    engine: Engine, trace_id: str, *, seen_status: str, seen_at: datetime, now: datetime
) -> bool:
    """Queue again a trace the sweeper found stale (`queued` and never picked up, or
    `processing` with a dead worker), unless anyone changed it since it was read at
    `seen_at`: concurrent sweepers then re-send it once, not once each.

    Returns:
        Whether this caller moved it (and so should send its ingest task).
    """
    check_transition(seen_status, QUEUED)
    return _touch_unchanged(engine, trace_id, seen_at, status=QUEUED, updated_at=now)


def fail_abandoned(
    engine: Engine, trace_id: str, *, seen_at: datetime, now: datetime, attempts: int
) -> bool:
    """Fail a `processing` trace whose workers kept dying (out of memory, or past the hard
    time limit), unless anyone changed it since it was read at `seen_at`.

    Returns:
        Whether this caller failed it.
    """
    check_transition(PROCESSING, FAILED)
    error = (
        f"ingest did not finish in {attempts} attempts: the worker died each time "
        "(killed, out of memory, or past the hard time limit INGEST_TIME_LIMIT_S)"
    )
    return _touch_unchanged(engine, trace_id, seen_at, status=FAILED, updated_at=now, error=error)


def _release(conn: Connection, trace_id: str, status: TraceStatus, message: str) -> None:
    """Leave the claim with `status` and an error message (cut to fit)."""
    conn.execute(
        update(Trace)
        .where(col(Trace.id) == trace_id)
        .values(
            status=status,
            error=message[:_ERROR_CHARS],
            progress=None,
            ingest_claimed_until=None,
            updated_at=utc_now(),
        )
    )


def _touch_unchanged(engine: Engine, trace_id: str, seen_at: datetime, **values: Any) -> bool:
    """One conditional UPDATE on the row's old `updated_at`, clearing progress and claim."""
    with engine.begin() as conn:
        done = conn.execute(
            update(Trace)
            .where(col(Trace.id) == trace_id, col(Trace.updated_at) == seen_at)
            .values(progress=None, ingest_claimed_until=None, **values)
        )
    return done.rowcount == 1
