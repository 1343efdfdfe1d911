"""The trace state machine: the allowed status changes, and the refusal of every other."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session

from backend.models import Trace, TraceStatus
from backend.services.traces.states import (
    ALLOWED,
    IllegalTransitionError,
    check_transition,
    requeue_stale,
)

Q, P, R, F = (TraceStatus.QUEUED, TraceStatus.PROCESSING, TraceStatus.READY, TraceStatus.FAILED)
# Written out by hand from the lifecycle the docs describe, not read from the table.
LEGAL = {
    (Q, P),  # a worker claims it
    (Q, Q),  # the sweeper re-sends a queued trace nobody picked up
    (P, R),  # loaded
    (P, F),  # a bad file, the time limit, a dead worker too often, a full disk too often
    (P, Q),  # a full disk, or a dead worker: tried again later
    (P, P),  # a lapsed claim taken over by another worker
    (R, P),  # re-ingest by a newer parser
    (F, P),  # a redelivered message tries again
}
ILLEGAL = sorted(set(itertools.product(TraceStatus, TraceStatus)) - LEGAL)


def test_the_table_allows_exactly_the_lifecycle() -> None:
    assert {(a, b) for a, targets in ALLOWED.items() for b in targets} == LEGAL


@pytest.mark.parametrize(("current", "target"), sorted(LEGAL))
def test_a_legal_change_passes(current: TraceStatus, target: TraceStatus) -> None:
    check_transition(current, target)
    check_transition(str(current), target)  # as read from a row: plain text


@pytest.mark.parametrize(("current", "target"), ILLEGAL)
def test_an_illegal_change_is_refused(current: TraceStatus, target: TraceStatus) -> None:
    with pytest.raises(IllegalTransitionError, match=f"{current} -> {target}"):
        check_transition(current, target)


def test_an_unknown_status_is_refused() -> None:
    with pytest.raises(IllegalTransitionError, match="deleted -> queued"):
        check_transition("deleted", Q)


def _stored(engine: Engine, status: TraceStatus, sha: str) -> tuple[str, datetime]:
    """A trace row in `status`, last changed an hour ago; its id and stored `updated_at`."""
    with Session(engine) as session:
        trace = Trace(
            name="t",
            blob_sha256=sha,
            size_bytes=1,
            status=status,
            updated_at=datetime.now(UTC) - timedelta(hours=1),
        )
        session.add(trace)
        session.commit()
        session.refresh(trace)
        return trace.id, trace.updated_at


def _status(engine: Engine, trace_id: str) -> str:
    with Session(engine) as session:
        trace = session.get(Trace, trace_id)
        assert trace is not None
        return trace.status


def test_requeueing_a_ready_trace_is_refused_before_any_sql(engine: Engine) -> None:
    ready, ready_at = _stored(engine, R, "0" * 64)
    queued, queued_at = _stored(engine, Q, "1" * 64)
    now = datetime.now(UTC)
    with pytest.raises(IllegalTransitionError, match="ready -> queued"):
        requeue_stale(engine, ready, seen_status=R, seen_at=ready_at, now=now)
    assert _status(engine, ready) == R
    # the same call for a stale queued trace goes through
    assert requeue_stale(engine, queued, seen_status=Q, seen_at=queued_at, now=now)
    assert _status(engine, queued) == Q
