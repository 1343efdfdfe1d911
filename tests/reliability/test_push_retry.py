"""`perfdash push` resends on a 429 (after the server's Retry-After) and on a refused
connection, against a real uvicorn; the database restart itself is in test_db_restart.py."""

from __future__ import annotations

import doctest
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from sqlalchemy.engine import Engine
from sqlmodel import Session, func, select

import workers.cli.http_retry
from backend.core.config import Settings
from backend.main import create_app
from backend.models.metrics import MetricPoint
from backend.services.auth.tokens import create_token
from tests.reliability.conftest import free_port


def _start(port: int) -> tuple[uvicorn.Server, threading.Thread]:
    config = uvicorn.Config(create_app(), host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    return server, thread


@pytest.fixture
def slow_token_settings(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    """One request per token at once, refilled every 4 s: the second push gets a 429."""
    from backend.services.auth.rate_limit import token_buckets

    monkeypatch.setenv("PERFDASH_TOKEN_RATE_BURST", "1")
    monkeypatch.setenv("PERFDASH_TOKEN_RATE_PER_S", "0.25")
    from tests.conftest import _clear_caches

    _clear_caches()
    token_buckets.cache_clear()
    yield settings
    token_buckets.cache_clear()


def _push(url: str, token: str, doc: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "workers.cli", "push", str(doc), "--url", url,
         "--token-env", "CI_TOKEN", "--retries", "5"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "CI_TOKEN": token},
    )  # fmt: skip


def test_push_waits_out_a_429_and_a_server_that_is_not_up_yet(
    slow_token_settings: Settings, engine: Engine, tmp_path: Path
) -> None:
    with Session(engine) as session:
        token, _ = create_token(session, "ci", ["metrics:write"])
    docs = []
    for run in ("a", "b"):
        doc = tmp_path / f"{run}.json"
        points = [{"metric": "step_ms", "value": 1.0}, {"metric": "tok_s", "value": 2.0}]
        doc.write_text(
            json.dumps({"project": "p", "benchmark": "b", "run_id": run, "points": points})
        )
        docs.append(doc)
    port = free_port()
    url = f"http://127.0.0.1:{port}"

    # Nothing listens yet: the push retries until the server below is up.
    early_err = tmp_path / "early.err"
    with early_err.open("w") as err_file:
        early = subprocess.Popen(
            [sys.executable, "-m", "workers.cli", "push", str(docs[0]), "--url", url,
             "--token-env", "CI_TOKEN", "--retries", "8"],
            stdout=subprocess.PIPE, stderr=err_file, text=True,
            env={**os.environ, "CI_TOKEN": token},
        )  # fmt: skip
    deadline = time.monotonic() + 60
    while "failed (ConnectError" not in early_err.read_text():
        assert early.poll() is None and time.monotonic() < deadline, early_err.read_text()
        time.sleep(0.05)
    server, thread = _start(port)
    try:
        out, _ = early.communicate(timeout=120)
        assert early.returncode == 0, early_err.read_text()
        assert "stored 2, duplicates 0" in out
        # The token's one request is spent: this push is refused with 429 and resent.
        second = _push(url, token, docs[1])
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    assert second.returncode == 0, second.stderr
    # Jittered backoff alone waits at most 0.5 s before the first resend; the server's
    # Retry-After (4 s less the time since the first push, rounded up) is longer.
    waited = re.search(r"failed \(HTTP 429\); retry 1/5 in ([\d.]+) s", second.stderr)
    assert waited is not None, second.stderr
    assert float(waited.group(1)) >= 1.0
    assert "stored 2, duplicates 0" in second.stdout
    with Session(engine) as session:
        assert session.exec(select(func.count()).select_from(MetricPoint)).one() == 4


def test_backoff_doctests() -> None:
    assert doctest.testmod(workers.cli.http_retry).failed == 0
