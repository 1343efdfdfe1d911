"""Fault fixtures: a private Redis server, a private PostgreSQL server, real worker
processes, and a dead broker URL.

The shared Redis on 6379 has 16 databases and other people's tests on it, so these tests
start their own `redis-server` on a free port (database 17 of 32, the number this area was
given) and stop only that process. "Broker down" is a Redis URL on a port nothing listens on.
Likewise the PostgreSQL that a test restarts is its own (`initdb` + `pg_ctl` in a temporary
directory, trust auth, loopback only), never the shared one on 5432.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from backend.core.config import Settings
from tests.conftest import _clear_caches
from tests.real_worker import stop_process_group

REDIS_DB = 17
REDIS_SERVER = shutil.which("redis-server")
PG_BIN = {name: shutil.which(name) for name in ("initdb", "pg_ctl")}


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
            stop_process_group(proc)


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


@dataclass
class PrivatePostgres:
    """A PostgreSQL server of this test's own, which the test may stop and restart.

    initdb refuses to run as root, so as root the server runs as the `postgres` user.
    """

    root: Path
    port: int

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def log_path(self) -> Path:
        return self.root / "server.log"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def _run(self, *args: str) -> None:
        user = "postgres" if os.geteuid() == 0 else None
        subprocess.run(args, check=True, capture_output=True, user=user, timeout=120)

    def pg_ctl(self, action: str, mode: str = "fast") -> None:
        """`pg_ctl start|stop|restart -m MODE -w`: returns once the server is up (or down)."""
        assert PG_BIN["pg_ctl"] is not None
        extra = () if action == "start" else ("-m", mode)
        self._run(PG_BIN["pg_ctl"], "-D", str(self.data), "-l", str(self.log_path), *extra,
                  "-w", action)  # fmt: skip

    def init_and_start(self) -> None:
        assert PG_BIN["initdb"] is not None
        self._run(PG_BIN["initdb"], "-D", str(self.data), "-U", "postgres", "--auth=trust",
                  "-E", "UTF8", "--no-sync")  # fmt: skip
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write(
                f"port = {self.port}\nlisten_addresses = '127.0.0.1'\n"
                f"unix_socket_directories = '{self.root}'\n"
            )
        self.pg_ctl("start")

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(f"postgresql://postgres@127.0.0.1:{self.port}/postgres",
                             autocommit=True) as conn:  # fmt: skip
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


@pytest.fixture
def private_postgres() -> Iterator[PrivatePostgres]:
    """A running private PostgreSQL on a free loopback port; stopped and removed afterwards."""
    if None in PG_BIN.values():
        pytest.skip("initdb/pg_ctl are not installed")
    root = Path(tempfile.mkdtemp(prefix="rel-pg-"))  # short: the socket path has a limit
    if os.geteuid() == 0:
        shutil.chown(root, user="postgres")
    server = PrivatePostgres(root, free_port())
    try:
        server.init_and_start()
        yield server
    finally:
        if (server.data / "postmaster.pid").exists():
            with contextlib.suppress(subprocess.SubprocessError):
                server.pg_ctl("stop", "immediate")
        shutil.rmtree(root, ignore_errors=True)
