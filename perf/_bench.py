"""Helpers the benchmarks in perf/ share: child processes (so each measurement's peak RSS is
its own), their environment, a scratch PostgreSQL database and a private redis-server.

The benchmarks run as scripts (`python perf/bench_x.py`), so this imports as `_bench`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_child(cmd: list[str], env: dict[str, str]) -> dict[str, float]:
    """Run `cmd` from the repo root; its last stdout line is the JSON result."""
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[:3]} failed:\n{proc.stderr[-3000:]}")
    result: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def perfdash_env(database_url: str, data_dir: Path) -> dict[str, str]:
    """This environment without PERFDASH_* settings, plus a private database and data dir
    with upload/decompression caps big enough for benchmark inputs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERFDASH_")}
    return env | {
        "PERFDASH_DATA_DIR": str(data_dir),
        "PERFDASH_DATABASE_URL": database_url,
        "PERFDASH_MAX_UPLOAD_BYTES": str(8 * 1024**3),
        "PERFDASH_MAX_DECOMPRESSED_BYTES": str(16 * 1024**3),
    }


@contextmanager
def scratch_postgres(url: str, tag: str) -> Iterator[str]:
    """A freshly created database on the server of `url`, dropped afterwards."""
    import psycopg
    from sqlalchemy.engine import make_url

    base = make_url(url)
    name = f"perfdash_bench_{tag}_{os.getpid()}"
    admin = base.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield base.set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def private_redis(workdir: Path) -> Iterator[str]:
    """A memory-only redis-server of this run's own on a free loopback port (the shared one
    has other people's queues); yields its URL (database 0) and stops it afterwards."""
    server = shutil.which("redis-server")
    if server is None:
        raise SystemExit("redis-server is not installed")
    port = free_port()
    proc = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
         "no", "--dir", str(workdir)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise SystemExit("redis-server did not start") from None
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


PYTHON = sys.executable


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
