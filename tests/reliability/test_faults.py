"""Faults with real processes: the broker down during uploads, a worker SIGKILLed mid-ingest.

Each test runs on SQLite and on PostgreSQL, with a private redis-server (database 17) and
real `perfdash worker` processes; see `conftest.py`.
"""

from __future__ import annotations

import functools
import logging
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient
from sqlalchemy import text

from backend.core.config import Settings
from backend.core.db import get_engine
from backend.main import create_app
from ingest import parse_file
from tests.factories import stored_events, wait_for_trace
from tests.reliability.conftest import Workers, dead_broker_url

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
SMALL = [
    REPO / "tests" / "data" / "torch" / "h200_train_step.pt.trace.json.gz",
    REPO / "tests" / "data" / "torch" / "h200_gpt_small.pt.trace.json.gz",
    REPO / "tests" / "data" / "nsys" / "copies.sqlite",
]
BIG = REPO / "perf" / "data" / "h200_gpt_12l.pt.trace.json.gz"
FIRST_LIMIT_S = 10  # the killed worker's time limit, so the length of its claim


def _status(client: TestClient, trace_id: str) -> dict[str, Any]:
    doc: dict[str, Any] = client.get(f"/api/v1/traces/{trace_id}").json()
    return doc


@functools.cache
def big_event_count() -> int:
    """The events in BIG, counted straight from the file with no database (once a session:
    the tests that need it call it while their workers wait out a limit, on an idle CPU)."""
    return sum(1 for _ in parse_file(BIG).events)


def _stored_events(trace_id: str) -> int:
    return len(stored_events(get_engine(), trace_id))


def _ingest_attempts(trace_id: str) -> int:
    with get_engine().connect() as conn:
        sql = text("SELECT ingest_attempts FROM traces WHERE id = :t")
        return int(conn.execute(sql, {"t": trace_id}).scalar_one())


def test_uploads_succeed_while_the_broker_is_down_and_are_ingested_once_it_is_back(
    use_broker: Callable[[str], Settings],
    redis_url: str,
    workers: Workers,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("PERFDASH_REQUEUE_AFTER_S", "1")
    use_broker(dead_broker_url())
    with TestClient(create_app()) as client, caplog.at_level(logging.WARNING):
        assert client.get("/healthz").json()["broker"] != "ok"
        ids = []
        for path in SMALL:
            up = client.post("/api/v1/traces", files={"file": (path.name, path.read_bytes())})
            assert up.status_code == 202, up.text
            assert up.json()["status"] == "queued"
            ids.append(up.json()["id"])
        assert all(_status(client, i)["status"] == "queued" for i in ids)
        assert sum("broker unreachable" in r.getMessage() for r in caplog.records) == len(ids)

    time.sleep(1.5)  # the rows are now older than REQUEUE_AFTER_S
    use_broker(redis_url)
    assert redis.Redis.from_url(redis_url).llen("ingest") == 0, "nothing reached any broker"
    workers.start()  # its start-up sweep re-sends the stranded traces
    with TestClient(create_app()) as client:
        done = [wait_for_trace(client, i, timeout_s=120) for i in ids]
    assert [d["status"] for d in done] == ["ready"] * len(ids), [d["error"] for d in done]
    assert "sweeper: 3 re-sent" in workers.log(0)
    for doc in done:
        assert _stored_events(doc["id"]) == sum(doc["event_counts"].values()) > 0


def test_a_worker_killed_mid_ingest_is_replaced_and_the_trace_is_ready_exactly_once(
    use_broker: Callable[[str], Settings],
    redis_url: str,
    workers: Workers,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The killed worker's claim lapses after its time limit (10 s; it is killed about 1 s
    # into the task). The second worker's Redis transport redelivers the unacknowledged
    # message after its visibility timeout (15 s, checked every second), once that claim
    # has lapsed. Its own time limit leaves the re-run plenty of room; were the re-run
    # slower than 15 s, its message would come again and the live claim would drop it.
    monkeypatch.setenv("PERFDASH_SWEEP_INTERVAL_S", "3600")  # recovery by redelivery alone
    use_broker(redis_url)
    first = workers.start(PERFDASH_INGEST_TIME_LIMIT_S=str(FIRST_LIMIT_S))
    with TestClient(create_app()) as client:
        up = client.post("/api/v1/traces", files={"file": (BIG.name, BIG.read_bytes())})
        trace_id = up.json()["id"]
        wait_for_trace(client, trace_id, {"processing"}, timeout_s=60)
        _wait_progress(client, trace_id)
        workers.kill(first, signal.SIGKILL)
        assert _status(client, trace_id)["status"] == "processing"
        assert _stored_events(trace_id) == 0, "the killed attempt's rows were rolled back"

        workers.start(
            PERFDASH_INGEST_TIME_LIMIT_S="120",
            PERFDASH_BROKER_VISIBILITY_TIMEOUT_S=str(FIRST_LIMIT_S + 5),
        )
        expected = big_event_count()  # meanwhile, Redis holds the message back
        done = wait_for_trace(client, trace_id, timeout_s=240)
        assert done["status"] == "ready", done["error"]
        _wait_broker_idle(redis_url)  # the redelivered original message was consumed too
        assert _status(client, trace_id)["status"] == "ready"
    assert sum(done["event_counts"].values()) == expected > 150_000
    assert _stored_events(trace_id) == expected
    assert _ingest_attempts(trace_id) == 2, "one killed attempt, then the redelivered message"
    assert "re-sent" not in workers.log(1)


def _wait_progress(client: TestClient, trace_id: str) -> None:
    """Until the worker reports stored events, so the kill lands inside the load."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        doc = _status(client, trace_id)
        if (doc.get("progress") or {}).get("events"):
            return
        time.sleep(0.05)
    raise AssertionError(f"no ingest progress for {trace_id}: {doc}")


def _wait_broker_idle(url: str, timeout_s: float = 60) -> None:
    r = redis.Redis.from_url(url)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if r.llen("ingest") == 0 and r.hlen("unacked") == 0:
            return
        time.sleep(0.5)
    raise AssertionError(
        f"broker still holds {r.llen('ingest')} queued, {r.hlen('unacked')} unacked"
    )
