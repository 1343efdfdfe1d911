"""PostgreSQL restarts while CI pushes metrics: clients retry, every point is stored once.

Real processes throughout: a private PostgreSQL (restarted with `pg_ctl restart -m fast`,
stopped until a push has been refused, and restarted with `-m immediate`, i.e. a crash
and recovery), a real `perfdash serve --no-worker` on it, and `perfdash push` command-line
clients pushing new runs in a loop. The API must answer 503 with Retry-After (never a
500) while the database is away and recover without a restart of its own; the clients
resend the same document; and the rows counted in the database afterwards are exactly
the points pushed.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psycopg
import pytest

from tests.real_worker import stop_process_group
from tests.reliability.conftest import PrivatePostgres, free_port

pytestmark = pytest.mark.postgres

CLIENTS = 3
POINTS_PER_PUSH = 400
WAIT_S = 120.0  # how long any one stage may take before the test gives up


@dataclass
class Pushers:
    """`perfdash push` clients, each pushing a new run per iteration until told to stop."""

    url: str
    token: str
    tmp_path: Path
    done: list[str] = field(default_factory=list)  # run ids the CLI reported stored
    failures: list[str] = field(default_factory=list)
    retried: list[str] = field(default_factory=list)  # stderr of pushes that retried
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def document(self, run_id: str) -> Path:
        path = self.tmp_path / f"{run_id}.json"
        points = [
            {"metric": f"m{i:04d}", "unit": "ms", "value": float(i)} for i in range(POINTS_PER_PUSH)
        ]
        doc = {"project": "rel", "benchmark": "restart", "run_id": run_id, "points": points}
        path.write_text(json.dumps(doc))
        return path

    def client(self, index: int) -> None:
        n = 0
        while not self.stop.is_set() or n == 0:
            run_id = f"c{index}-{n}"
            proc = subprocess.run(
                [sys.executable, "-m", "workers.cli", "push", str(self.document(run_id)),
                 "--url", self.url, "--token-env", "CI_TOKEN", "--retries", "12"],
                capture_output=True, text=True, timeout=300,
                env={**os.environ, "CI_TOKEN": self.token},
            )  # fmt: skip
            with self.lock:
                if proc.returncode != 0:
                    self.failures.append(f"{run_id}: rc {proc.returncode}\n{proc.stderr}")
                else:
                    self.done.append(run_id)
                if "retry 1/" in proc.stderr:
                    self.retried.append(proc.stderr)
            n += 1

    def wait_for(self, what: str, condition: Callable[[], bool]) -> None:
        deadline = time.monotonic() + WAIT_S
        while not condition():
            assert not self.failures, self.failures
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            time.sleep(0.1)

    def wait_pushes(self, more: int) -> None:
        target = len(self.done) + more
        self.wait_for(f"{more} more pushes", lambda: len(self.done) >= target)


@contextlib.contextmanager
def serve(database_url: str, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """`perfdash serve --no-worker --no-samples` on the database; yields (url, log path)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERFDASH_")}
    env |= {"PERFDASH_DATA_DIR": str(tmp_path / "var"), "PERFDASH_DATABASE_URL": database_url}
    env["PERFDASH_ACCESS_LOG"] = "true"  # the 503s are counted in the access log
    port, log_path = free_port(), tmp_path / "serve.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "workers.cli", "serve", "--no-worker", "--no-samples",
             "--port", str(port)],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + WAIT_S
        while True:
            assert proc.poll() is None, log_path.read_text(errors="replace")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/api/v1/metrics/facets", timeout=2).status_code == 200:
                    break
            assert time.monotonic() < deadline, "perfdash serve did not start"
            time.sleep(0.2)
        yield url, log_path
    finally:
        stop_process_group(proc)


def test_pushes_survive_postgres_restarts_and_store_every_point_once(
    private_postgres: PrivatePostgres, tmp_path: Path
) -> None:
    database_url = private_postgres.create_database("perfdash")
    env = {**os.environ, "PERFDASH_DATABASE_URL": database_url}
    with serve(database_url, tmp_path) as (url, server_log):
        created = subprocess.run(
            [sys.executable, "-m", "workers.cli", "token", "create", "--scope", "metrics:write"],
            capture_output=True, text=True, env=env, timeout=120, check=True,
        )  # fmt: skip
        pushers = Pushers(url, created.stdout.strip(), tmp_path)
        threads = [threading.Thread(target=pushers.client, args=(i,)) for i in range(CLIENTS)]
        for t in threads:
            t.start()
        try:
            pushers.wait_pushes(CLIENTS)
            private_postgres.pg_ctl("restart", "fast")
            pushers.wait_pushes(CLIENTS)
            # Down long enough that pushes meet it: held until the API has refused one.
            private_postgres.pg_ctl("stop", "fast")
            pushers.wait_for(
                "a 503 from the API",
                lambda: '"POST /api/v1/metrics HTTP/1.1" 503' in server_log.read_text(),
            )
            refused = httpx.post(
                f"{url}/api/v1/metrics",
                json={
                    "project": "rel",
                    "benchmark": "restart",
                    "run_id": "direct",
                    "points": [{"metric": "x", "value": 1.0}],
                },
                headers={"Authorization": f"Bearer {pushers.token}"},
                timeout=30,
            )
            private_postgres.pg_ctl("start")
            pushers.wait_pushes(CLIENTS)
            private_postgres.pg_ctl("restart", "immediate")  # a crash: recovery on start
            pushers.wait_pushes(CLIENTS)
        finally:
            pushers.stop.set()
            for t in threads:
                t.join(timeout=WAIT_S)
        log = server_log.read_text(errors="replace")

    refusals = log.count('"POST /api/v1/metrics HTTP/1.1" 503')
    print(f"{len(pushers.done)} pushes, {len(pushers.retried)} retried, {refusals} 503s")
    assert not pushers.failures, pushers.failures
    assert "500 Internal Server Error" not in log and "Traceback" not in log, log[-5000:]
    assert "database unavailable in POST /api/v1/metrics" in log
    assert refused.status_code == 503 and refused.headers["Retry-After"] == "2"
    assert refused.json() == {"detail": "the database is unavailable; retry the request"}
    assert any("failed (HTTP 503); retry 1/12" in e for e in pushers.retried), pushers.retried
    with psycopg.connect(private_postgres.url("perfdash").replace("+psycopg", "")) as conn:
        runs = dict(
            conn.execute(
                "SELECT r.run_id, count(p.id) FROM metric_runs r "
                "LEFT JOIN metric_points p ON p.run_id = r.id GROUP BY r.run_id"
            ).fetchall()
        )
        total = conn.execute("SELECT count(*) FROM metric_points").fetchone()
    assert runs == dict.fromkeys(pushers.done, POINTS_PER_PUSH)
    assert total == (len(pushers.done) * POINTS_PER_PUSH,)
