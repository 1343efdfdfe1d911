"""The sweeper and the ingest claim, on both databases, without a worker.

The `settings` fixture's broker is the filesystem transport, so a re-sent task is a real
message file that these tests can count.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine
from sqlmodel import Session

from backend.core.config import Settings
from backend.models import Trace, TraceStatus
from backend.services.loading.pipeline import ingest_trace
from backend.services.loading.requeue import sweep_traces
from backend.services.traces.states import claim_trace
from tests.factories import upload_trace

SMALL = Path(__file__).resolve().parents[1] / "data" / "torch" / "h200_train_step.pt.trace.json.gz"


def _messages(settings: Settings) -> int:
    return sum(1 for p in (settings.broker_dir / "queue").iterdir() if p.is_file())


def _set(engine: Engine, trace_id: str, **values: object) -> None:
    with Session(engine) as session:
        trace = session.get(Trace, trace_id)
        assert trace is not None
        for key, value in values.items():
            setattr(trace, key, value)
        session.add(trace)
        session.commit()


def _get(engine: Engine, trace_id: str) -> Trace:
    with Session(engine) as session:
        trace = session.get(Trace, trace_id)
        assert trace is not None
        return trace


def test_only_stale_queued_traces_are_resent_once_per_period(
    client: TestClient, engine: Engine, settings: Settings
) -> None:
    fresh = upload_trace(client, SMALL)
    old = upload_trace(client, SMALL.read_bytes() + b"\n", SMALL.name)
    _set(
        engine, old, updated_at=datetime.now(UTC) - timedelta(seconds=settings.requeue_after_s + 5)
    )
    sent = _messages(settings)

    first = sweep_traces(engine=engine, settings=settings)
    assert first.requeued == [old] and not first.failed and not first.unsent
    assert _messages(settings) == sent + 1
    assert sweep_traces(engine=engine, settings=settings).requeued == []  # touched: not again
    assert fresh not in first.requeued


def test_a_processing_trace_whose_claim_lapsed_is_resent_then_failed_after_max_attempts(
    client: TestClient, engine: Engine, settings: Settings
) -> None:
    trace_id = upload_trace(client, SMALL)
    assert claim_trace(engine, trace_id, lease_s=60)
    assert not claim_trace(engine, trace_id, lease_s=60), "a live claim excludes a second worker"
    grace = settings.claim_grace_s
    within_grace = datetime.now(UTC) + timedelta(seconds=60 + grace - 5)
    later = datetime.now(UTC) + timedelta(seconds=60 + grace + 1)
    assert sweep_traces(engine=engine, settings=settings).requeued == []  # claim still live
    # lapsed, but the killed attempt may still be rolling back
    assert sweep_traces(engine=engine, settings=settings, now=within_grace).requeued == []
    assert sweep_traces(engine=engine, settings=settings, now=later).requeued == [trace_id]
    assert _get(engine, trace_id).status == TraceStatus.QUEUED

    _set(engine, trace_id, ingest_attempts=settings.max_ingest_attempts)
    assert claim_trace(engine, trace_id, lease_s=60)
    much_later = later + timedelta(seconds=60 + grace + 1)
    swept = sweep_traces(engine=engine, settings=settings, now=much_later)
    assert swept.failed == [trace_id] and swept.requeued == []
    trace = _get(engine, trace_id)
    assert trace.status == TraceStatus.FAILED
    assert trace.error is not None and "the worker died each time" in trace.error


def test_a_duplicate_message_for_a_held_trace_is_dropped_and_a_ready_one_skipped(
    client: TestClient, engine: Engine, settings: Settings
) -> None:
    trace_id = upload_trace(client, SMALL)
    assert claim_trace(engine, trace_id, lease_s=60)
    assert ingest_trace(engine=engine, settings=settings, trace_id=trace_id) is None
    _set(engine, trace_id, ingest_claimed_until=datetime.now(UTC) - timedelta(seconds=1))
    assert ingest_trace(engine=engine, settings=settings, trace_id=trace_id) == "ready"
    assert ingest_trace(engine=engine, settings=settings, trace_id=trace_id) == "ready"
    trace = _get(engine, trace_id)
    assert trace.ingest_attempts == 2 and trace.ingest_claimed_until is None
