"""A full disk under the blob store, and an ingest past its time limit on a real worker."""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from backend.core.config import Settings
from backend.core.db import get_engine
from backend.main import create_app
from tests.reliability.conftest import Workers

REPO = Path(__file__).resolve().parents[2]
SMALL = REPO / "tests" / "data" / "torch" / "h200_train_step.pt.trace.json.gz"
BIG = REPO / "perf" / "data" / "h200_gpt_12l.pt.trace.json.gz"


class _DiskFillsUp:
    """A real file that accepts `room` bytes, then fails as a full disk does."""

    def __init__(self, inner: IO[bytes], room: int) -> None:
        self.inner, self.room = inner, room

    def write(self, data: bytes) -> int:
        if len(data) > self.room:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.room -= len(data)
        return self.inner.write(data)

    def __enter__(self) -> _DiskFillsUp:
        return self

    def __exit__(self, *exc: object) -> None:
        self.inner.close()


def _count(table: str) -> int:
    with get_engine().connect() as conn:
        return int(conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one())


def test_a_full_blob_store_answers_507_and_leaves_no_rows_or_files(
    client: TestClient, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_fdopen = os.fdopen

    def fdopen(fd: int, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        inner = real_fdopen(fd, mode, *args, **kwargs)
        return _DiskFillsUp(inner, room=64 * 1024) if "w" in mode else inner

    monkeypatch.setattr(os, "fdopen", fdopen)
    big = BIG.read_bytes()[: 3 * 1024 * 1024]
    response = client.post("/api/v1/traces", files={"file": ("t.json.gz", big)})
    assert response.status_code == 507
    assert "no space left" in response.json()["detail"]
    assert _count("traces") == 0
    assert [p for p in settings.blob_dir.rglob("*") if p.is_file()] == []

    monkeypatch.setattr(os, "fdopen", real_fdopen)  # space is back: the same upload works
    retry = client.post("/api/v1/traces", files={"file": ("t.json.gz", big)})
    assert retry.status_code == 202, retry.text
    assert _count("traces") == 1


@pytest.mark.integration
def test_an_ingest_past_the_time_limit_fails_the_trace_and_the_worker_goes_on(
    use_broker: Callable[[str], Settings],
    redis_url: str,
    workers: Workers,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PERFDASH_INGEST_TIME_LIMIT_S", "3")  # soft limit 2 s; parsing takes 3+
    use_broker(redis_url)
    worker = workers.start()
    with TestClient(create_app()) as client:
        slow = client.post("/api/v1/traces", files={"file": (BIG.name, BIG.read_bytes())})
        failed = _wait_done(client, slow.json()["id"])
        assert failed["status"] == "failed"
        assert "ran past the 3 s time limit" in failed["error"]
        assert _count("events") == 0, "the stopped attempt's rows were rolled back"

        quick = client.post("/api/v1/traces", files={"file": (SMALL.name, SMALL.read_bytes())})
        ready = _wait_done(client, quick.json()["id"])
        assert ready["status"] == "ready", ready["error"]
    assert worker.poll() is None, "the worker keeps running after a time limit"


def _wait_done(client: TestClient, trace_id: str, timeout_s: float = 90) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        doc: dict[str, Any] = client.get(f"/api/v1/traces/{trace_id}").json()
        if doc["status"] in ("ready", "failed"):
            return doc
        time.sleep(0.1)
    raise AssertionError(f"trace {trace_id} not done after {timeout_s}s")
