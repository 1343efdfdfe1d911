"""Helpers every ingest benchmark in perf/ shares: child processes (so each measurement's
peak RSS is its own), their environment, and a scratch PostgreSQL database.

The benchmarks run as scripts (`python perf/bench_x.py`), so this imports as `_bench`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
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


PYTHON = sys.executable
