"""End to end through a real `perfdash worker` process on the local Redis.

HTTP upload -> blob store -> Redis -> Celery worker -> parser -> database -> HTTP, with the
answer checked against sums over the raw JSON that were saved when the trace was made.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from backend.core.config import Settings
from tests.factories import wait_for_trace
from tests.real_worker import redis_broker, worker_process

pytestmark = pytest.mark.integration
REDIS_URL = os.environ.get("PERFDASH_TEST_REDIS_URL", "redis://127.0.0.1:6379/9")
KERNEL_SUMS = (
    Path(__file__).resolve().parents[1] / "data" / "torch" / "h200_train_step.kernel_sums.json"
)


@pytest.fixture
def redis_settings(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    """The test settings, but with the broker on the real Redis (a private key space)."""
    with redis_broker(monkeypatch, REDIS_URL) as redis_backed:
        yield redis_backed


@pytest.fixture
def worker(redis_settings: Settings, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A real worker process, started with the same environment as the API."""
    with worker_process("ingest", tmp_path / "worker.log") as proc:
        yield proc


def test_upload_is_parsed_by_a_real_worker(
    worker: subprocess.Popen[bytes], redis_settings: Settings, h200_trace: Path
) -> None:
    from backend.main import create_app

    with TestClient(create_app()) as client:
        assert client.get("/healthz").json()["broker"] == "ok"
        bad = client.post("/api/v1/traces", files={"file": ("bad.json", b'{"traceEvents": [')})
        good = client.post(
            "/api/v1/traces", files={"file": (h200_trace.name, h200_trace.read_bytes())}
        )
        assert bad.status_code == good.status_code == 202

        failed = wait_for_trace(client, bad.json()["id"])
        assert failed["status"] == "failed"
        assert "invalid JSON" in str(failed["error"])

        ready = wait_for_trace(client, good.json()["id"])
        assert ready["status"] == "ready", ready["error"]
        assert worker.poll() is None, "a bad trace must not take the worker down"

        kernels = client.get(f"/api/v1/traces/{ready['id']}/kernels", params={"limit": 10}).json()
        expected = json.loads(KERNEL_SUMS.read_text())["kernels"][:10]
        assert [(k["name"], k["count"], k["total_ns"]) for k in kernels["items"]] == [
            (k["name"], k["count"], k["total_ns"]) for k in expected
        ]
