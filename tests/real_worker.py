"""Real Celery workers on the real Redis, for integration tests of every area.

Each area passes its own Redis database number, so parallel runs never share a queue.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from backend.core.config import Settings


@contextlib.contextmanager
def redis_broker(monkeypatch: pytest.MonkeyPatch, url: str) -> Iterator[Settings]:
    """The current test settings with the broker on `url` (flushed before and after)."""
    from backend.core.config import get_settings
    from tests.conftest import _clear_caches

    redis.Redis.from_url(url).flushdb()
    monkeypatch.setenv("PERFDASH_BROKER_URL", url)
    _clear_caches()
    try:
        yield get_settings()
    finally:
        redis.Redis.from_url(url).flushdb()


@contextlib.contextmanager
def worker_process(queues: str, log_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """`perfdash worker --queues QUEUES --concurrency 1` with this process's environment,
    in its own process group, stopped (SIGTERM, then SIGKILL) on exit."""
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "workers.cli", "worker", "--queues", queues,
             "--concurrency", "1"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        try:
            yield proc
        finally:
            stop_process_group(proc)


def stop_process_group(proc: subprocess.Popen[bytes], grace_s: float = 30.0) -> None:
    """SIGTERM the process's whole group (a server and the workers it spawned), wait up to
    `grace_s` for its leader, then SIGKILL whatever of the group is left (pool children
    that outlive their parent). A group that is already gone is fine."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace_s)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
