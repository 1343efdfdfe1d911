"""Webhooks end to end: push -> status change -> Redis (db 10) -> real Celery worker of the
`webhooks` queue only -> a real local HTTP receiver that checks the HMAC signature; the first
attempt is refused to see a retry. The receiver is on loopback, so private targets are allowed.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from backend.core.config import Settings
from tests.factories import post_metrics, post_sla
from tests.metrics.helpers import serving
from tests.real_worker import redis_broker, worker_process

pytestmark = pytest.mark.integration
REDIS_URL = os.environ.get("PERFDASH_TEST_METRICS_REDIS_URL", "redis://127.0.0.1:6379/10")
SECRET = "s3cret"


class Receiver(ThreadingHTTPServer):
    """Records every request; answers 500 to the first one on /json, 200 otherwise."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.received: list[tuple[str, dict[str, str], bytes, int]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        first_json = self.path == "/json" and not any(
            p == "/json" for p, *_ in self.server.received
        )
        code = 500 if first_json else 200
        self.server.received.append((self.path, dict(self.headers), body, code))
        self.send_response(code)
        self.end_headers()

    def log_message(self, *_args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with serving(Receiver()) as server:
        yield server


@pytest.fixture
def redis_settings(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    monkeypatch.setenv("PERFDASH_WEBHOOK_ALLOW_PRIVATE", "true")
    with redis_broker(monkeypatch, REDIS_URL) as redis_backed:
        yield redis_backed


@pytest.fixture
def worker(redis_settings: Settings, tmp_path: Path) -> Iterator[Path]:
    log_path = tmp_path / "worker.log"
    with worker_process("webhooks", log_path):
        yield log_path


def _deliveries(
    client: TestClient, hook_id: int, n: int, log: Path, auth: dict[str, str]
) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        url = f"/api/v1/webhooks/{hook_id}/deliveries"
        rows: list[dict[str, Any]] = client.get(url, headers=auth).json()
        if len(rows) == n and all(r["status"] != "pending" for r in rows):
            return rows
        time.sleep(0.3)
    raise AssertionError(f"deliveries not done: {rows}\n{log.read_text()[-3000:]}")


def test_status_changes_are_delivered_signed_and_retried(
    worker: Path, receiver: Receiver, auth: dict[str, str]
) -> None:
    from backend.main import create_app

    with TestClient(create_app()) as client:
        hooks = [
            {"name": "json", "url": f"{receiver.url}/json", "secret": SECRET},
            {"name": "slack", "url": f"{receiver.url}/slack", "kind": "slack"},
        ]
        ids = [client.post("/api/v1/webhooks", json=h, headers=auth).json()["id"] for h in hooks]
        post_sla(client, auth, name="step", threshold=11.5, severity="critical")
        for commit, value in (("a", 11.0), ("b", 12.0), ("c", 12.5), ("d", 11.0)):
            points = [{"metric": "step_time_ms", "value": value}]
            post_metrics(client, auth, commit=commit, points=points)

        json_log = _deliveries(client, ids[0], 2, worker, auth)
        slack_log = _deliveries(client, ids[1], 2, worker, auth)

    # pass (first) -> fail (b) -> fail (c, no alert) -> pass (d): two alerts per webhook.
    assert [d["event"] for d in reversed(json_log)] == ["sla_failed", "sla_recovered"]
    assert {d["status"] for d in json_log + slack_log} == {"delivered"}
    assert sorted(d["attempts"] for d in json_log) == [1, 2]
    assert any(d["response_code"] == 200 for d in json_log)

    posted = [(h, b) for p, h, b, code in receiver.received if p == "/json" and code == 200]
    for headers, raw in posted:
        expected = "sha256=" + hmac.new(SECRET.encode(), raw, hashlib.sha256).hexdigest()
        assert headers["X-Perfdash-Signature"] == expected
    payloads = sorted((json.loads(b) for _, b in posted), key=lambda p: p["event"])
    assert [(p["event"], p["verdict"], p["previous"], p["observed"]) for p in payloads] == [
        ("sla_failed", "fail", "pass", 12.0),
        ("sla_recovered", "pass", "fail", 11.0),
    ]
    slack = [json.loads(b) for p, _, b, _ in receiver.received if p == "/slack"]
    assert {tuple(s) for s in slack} == {("text",)}
    assert any("*step* sla failed" in s["text"] and "12" in s["text"] for s in slack)
