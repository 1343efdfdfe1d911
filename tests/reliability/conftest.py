"""Fault fixtures: a private Redis server, real worker processes, and a dead broker URL.

The shared Redis on 6379 has 16 databases and other people's tests on it, so these tests
start their own `redis-server` on a free port (database 17 of 32, the number this area was
given) and stop only that process. "Broker down" is a Redis URL on a port nothing listens on.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from backend.core.config import Settings
from tests.conftest import _clear_caches

REDIS_DB = 17
REDIS_SERVER = shutil.which("redis-server")


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """A private, memory-only redis-server; its URL points at database 17."""
    if REDIS_SERVER is None:
        pytest.skip("redis-server is not installed")
    port = free_port()
    proc = subprocess.Popen(
        [
            REDIS_SERVER,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--databases",
            "32",
            "--dir",
            str(tmp_path),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/{REDIS_DB}"
    deadline = time.monotonic() + 10
    while True:
        try:
            redis.Redis.from_url(url).ping()
            break
        except redis.ConnectionError:
            if time.monotonic() > deadline:
                proc.kill()
                raise
            time.sleep(0.05)
    yield url
    proc.terminate()
    proc.wait(timeout=10)


@dataclass
class Workers:
    """Starts `perfdash worker` processes with the test's environment; stops only those."""

    tmp_path: Path
    procs: list[subprocess.Popen[bytes]]

    def start(self, **env: str) -> subprocess.Popen[bytes]:
        log = (self.tmp_path / f"worker{len(self.procs)}.log").open("wb")
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "workers.cli",
                "worker",
                "--queues",
                "ingest",
                "--concurrency",
                "1",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, **env},
        )
        log.close()
        self.procs.append(proc)
        return proc

    def kill(self, proc: subprocess.Popen[bytes], sig: int = signal.SIGKILL) -> None:
        """Signal the worker's whole process group (its main process and pool children)."""
        if proc.poll() is None:
            os.killpg(proc.pid, sig)
        proc.wait(timeout=30)

    def log(self, index: int) -> str:
        return (self.tmp_path / f"worker{index}.log").read_text(errors="replace")

    def stop_all(self) -> None:
        for proc in self.procs:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=30)
            except ProcessLookupError:
                continue
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Workers]:
    pool = Workers(tmp_path, [])
    yield pool
    pool.stop_all()


@pytest.fixture
def use_broker(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Callable[[str], Settings]:
    """Point this process (the API under test) and later workers at a broker URL."""

    def switch(url: str) -> Settings:
        monkeypatch.setenv("PERFDASH_BROKER_URL", url)
        _clear_caches()
        from backend.core.config import get_settings

        return get_settings()

    return switch


def dead_broker_url() -> str:
    """A Redis URL on a loopback port where nothing listens: the broker is down."""
    return f"redis://127.0.0.1:{free_port()}/{REDIS_DB}"
