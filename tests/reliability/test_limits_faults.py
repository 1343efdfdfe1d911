"""A full disk under the blob store, and an ingest past its time limit on a real worker."""

from __future__ import annotations

import errno
import io
import os
import pathlib
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.engine import Engine

from backend.core.config import Settings
from backend.core.db import get_engine
from backend.main import create_app
from backend.services.loading.pipeline import ingest_trace
from tests.factories import stored_events, upload_trace, wait_for_trace
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


def _zip_upload(client: TestClient) -> str:
    bundle = io.BytesIO()
    with zipfile.ZipFile(bundle, "w") as zf:
        zf.writestr("rank0.pt.trace.json.gz", SMALL.read_bytes())
    return upload_trace(client, bundle.getvalue(), "run.zip")


def _ingest_with_full_tmpdir(
    engine: Engine, settings: Settings, trace_id: str, monkeypatch: pytest.MonkeyPatch
) -> str | None:
    """Run the ingest while files created for extraction take 1 KB, then fail with ENOSPC."""
    real_open = pathlib.Path.open

    def open_(self: pathlib.Path, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        inner = real_open(self, mode, *args, **kwargs)
        return _DiskFillsUp(inner, room=1024) if mode == "xb" else inner

    with monkeypatch.context() as patch:
        patch.setattr(pathlib.Path, "open", open_)
        return ingest_trace(engine=engine, settings=settings, trace_id=trace_id)


def test_a_full_tmpdir_while_extracting_an_archive_is_the_servers_fault_and_retried(
    client: TestClient,
    engine: Engine,
    settings: Settings,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 25: a full TMPDIR was reported as "zip archive is truncated or corrupt" and the
    trace failed as a bad file. Now the trace goes back to `queued` (the sweeper re-sends
    it) with a message that says the server's disk is full, and the scratch is removed."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    trace_id = _zip_upload(client)
    status = _ingest_with_full_tmpdir(engine, settings, trace_id, monkeypatch)
    doc = client.get(f"/api/v1/traces/{trace_id}").json()
    assert status == "queued", doc["error"]
    assert "the server's disk is full" in doc["error"]
    assert "not a problem with the uploaded file" in doc["error"]
    assert "corrupt" not in doc["error"]
    assert list(tmp_path.glob("perfdash-archive-*")) == [], "the partial extraction is gone"
    # space is back: the retry (the sweeper's re-send) stores the trace
    assert ingest_trace(engine=engine, settings=settings, trace_id=trace_id) == "ready"


def test_a_disk_that_stays_full_fails_the_trace_after_max_attempts_saying_why(
    client: TestClient, engine: Engine, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace_id = _zip_upload(client)
    two = settings.model_copy(update={"max_ingest_attempts": 2})
    assert _ingest_with_full_tmpdir(engine, two, trace_id, monkeypatch) == "queued"
    assert _ingest_with_full_tmpdir(engine, two, trace_id, monkeypatch) == "failed"
    error = client.get(f"/api/v1/traces/{trace_id}").json()["error"]
    assert "the server's disk is full" in error and "gave up after 2 attempts" in error


@pytest.mark.integration
def test_an_ingest_past_the_time_limit_fails_the_trace_and_the_worker_goes_on(
    use_broker: Callable[[str], Settings],
    redis_url: str,
    workers: Workers,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Soft limit 0.5 s, hard 1 s: the 246k-event trace takes about 2 s to ingest here.
    monkeypatch.setenv("PERFDASH_INGEST_TIME_LIMIT_S", "1")
    use_broker(redis_url)
    worker = workers.start()
    with TestClient(create_app()) as client:
        slow = client.post("/api/v1/traces", files={"file": (BIG.name, BIG.read_bytes())})
        failed = wait_for_trace(client, slow.json()["id"])
        assert failed["status"] == "failed"
        assert "ran past the 1 s time limit" in failed["error"]
        # The stopped attempt's dataset is never named (its files go after the trace is
        # marked failed, or with the sweeper, so they are not checked here).
        assert stored_events(get_engine(), failed["id"]) == []

        quick = client.post("/api/v1/traces", files={"file": (SMALL.name, SMALL.read_bytes())})
        ready = wait_for_trace(client, quick.json()["id"])
        assert ready["status"] == "ready", ready["error"]
    assert worker.poll() is None, "the worker keeps running after a time limit"
