"""A bisect through a real worker finds the commit that made a CPU workload 2x slower.

A git repository of a tiny package (`slowpkg`, a `perfdash.workloads` entry point) gets
11 commits; from commit 6 on its busy loop runs twice the rounds. A spec installs it with
`git+file://REPO@{ref}`, and `POST /benchmarks/slow/bisects {good: c0, bad: c10}` must
confirm the slowdown on one runner, list the commits with `git rev-list` on that runner,
bisect, and end `found` at commit 6, within its run budget. The expected commit comes
from how the repository was built here, not from perfdash. The workload times itself
with the process's CPU clock, so other tests loading the machine do not move it.

API -> Redis (db 14) -> `perfdash worker --queues gpu,ingest` (+ its own runner queue)
-> pip install at each commit -> runner subprocess -> metrics push -> bisect advanced.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from backend.core.config import Settings
from backend.core.db import get_engine
from backend.services.auth.tokens import create_token
from tests.conftest import ENGINES, fresh_database, settings_on
from tests.real_worker import redis_broker, worker_process

pytest.importorskip("torch")
pytestmark = pytest.mark.integration
REDIS_URL = os.environ.get("PERFDASH_TEST_BISECT_REDIS_URL", "redis://127.0.0.1:6379/14")
COMMITS, SLOW_FROM = 11, 6
PYPROJECT = """[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "slowpkg"
version = "0.1.0"

[project.entry-points."perfdash.workloads"]
slow-step = "slowpkg.bench:step"
"""
BENCH = """import time
from slowpkg.knob import ROUNDS


def _work(n):
    x = 0
    for i in range(n):
        x = (x * 31 + i) % 1000003
    return x


def step(params, seed, device):
    n, iters = int(params["n"]) * ROUNDS, int(params["iters"])
    _work(n)
    samples = []
    for _ in range(iters):
        start = time.process_time()
        _work(n)
        samples.append((time.process_time() - start) * 1e3)
    return [{"metric": "step_ms", "unit": "ms", "direction": "lower_is_better",
             "samples": samples}]
"""


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}  # fmt: skip
    done = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, check=True)
    return done.stdout.decode().strip()


def make_repo(repo: Path) -> list[str]:
    """The package's history: commit i sets ROUNDS to 2 from SLOW_FROM on; every commit
    also edits a changelog, so none is empty. Returns the hashes, oldest first."""
    (repo / "slowpkg").mkdir(parents=True)
    (repo / "pyproject.toml").write_text(PYPROJECT)
    (repo / "slowpkg" / "__init__.py").write_text("")
    (repo / "slowpkg" / "bench.py").write_text(BENCH)
    _git(repo, "init", "-q", "-b", "main")
    hashes = []
    for i in range(COMMITS):
        (repo / "slowpkg" / "knob.py").write_text(f"ROUNDS = {2 if i >= SLOW_FROM else 1}\n")
        (repo / "CHANGES").write_text(f"commit {i}\n")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", f"commit {i}")
        hashes.append(_git(repo, "rev-parse", "HEAD"))
    return hashes


@pytest.fixture(scope="module", params=ENGINES[1:])
def bisect_env(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Settings]:
    """A fresh PostgreSQL database (a run takes seconds, so one engine: the one where
    completions can race), the broker on this test's own Redis database, and pip told to
    build with the installed setuptools and no index (hermetic, and faster)."""
    folder = tmp_path_factory.mktemp("bisect")
    with (
        pytest.MonkeyPatch.context() as monkeypatch,
        fresh_database(request.param, folder) as database_url,
        settings_on(database_url, folder, monkeypatch),
        redis_broker(monkeypatch, REDIS_URL) as redis_backed,
    ):
        monkeypatch.setenv("PIP_NO_BUILD_ISOLATION", "0")
        monkeypatch.setenv("PIP_DISABLE_PIP_VERSION_CHECK", "1")
        monkeypatch.setenv("PIP_NO_INDEX", "1")
        yield redis_backed


@pytest.fixture(scope="module")
def runner(
    bisect_env: Settings, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[subprocess.Popen[bytes]]:
    with worker_process("gpu,ingest", tmp_path_factory.mktemp("worker") / "worker.log") as proc:
        yield proc


def _poll(client: TestClient, path: str, done: Any, timeout_s: float = 420) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        body = client.get(path).json()
        if done(body):
            return body
        time.sleep(0.5)
    raise AssertionError(f"{path} not done after {timeout_s}s: {body}")


def test_bisect_finds_the_commit_that_made_the_workload_slower(
    runner: subprocess.Popen[bytes], bisect_env: Settings, tmp_path: Path
) -> None:
    from backend.main import create_app

    hashes = make_repo(tmp_path / "repo")
    with Session(get_engine()) as session:
        admin, _ = create_token(session, "admin", ["admin"])
    auth = {"Authorization": f"Bearer {admin}"}
    spec = {
        "name": "slow", "project": "bisect-test", "kind": "callable", "workload": "slow-step",
        "install": f"git+file://{tmp_path / 'repo'}@{{ref}}", "queue": "gpu",
        "params": {"n": 40000, "iters": 8}, "deterministic": "off", "timeout_s": 120,
    }  # fmt: skip
    body = {"good": hashes[0], "bad": hashes[-1], "metric": "step_ms", "repeats": 2,
            "budget": 10}  # fmt: skip
    with TestClient(create_app()) as client:
        assert client.post("/api/v1/benchmarks", json=spec, headers=auth).status_code == 200
        live = _poll(client, "/api/v1/runners?live=true", lambda b: b["count"] > 0, 120)
        started = client.post("/api/v1/benchmarks/slow/bisects", json=body, headers=auth)
        assert started.status_code == 202, started.text
        assert started.json()["runner"] == live["items"][0]["name"]
        again = client.post("/api/v1/benchmarks/slow/bisects", json=body, headers=auth)
        assert again.status_code == 422 and "already open" in again.text
        path = f"/api/v1/bisects/{started.json()['id']}"
        bisect = _poll(client, path, lambda b: b["status"] not in ("confirming", "bisecting"))
        runs = [
            client.get(f"/api/v1/benchmark-runs/{r}").json()
            for step in bisect["steps"]
            for r in step["runs"]
        ]
        listed = client.get("/api/v1/benchmarks/slow/bisects").json()
    assert bisect["status"] == "found", bisect
    assert bisect["first_bad"] == hashes[SLOW_FROM], bisect["steps"]
    assert bisect["last_good"] == hashes[SLOW_FROM - 1]
    assert bisect["commits_source"] == "git" and bisect["commits"] == hashes
    assert bisect["runs_used"] <= body["budget"] and len(runs) == bisect["runs_used"]
    # Same-runner A/B: every run on the pinned runner, at the commit it was queued for.
    assert {r["runner"] for r in runs} == {bisect["runner"]}
    assert all(r["status"] == "succeeded" and r["trigger"] == "bisect" for r in runs)
    # Each probe's verdict agrees with how the repository was built.
    for step in bisect["steps"]:
        slow = hashes.index(step["ref"]) >= SLOW_FROM
        assert step["verdict"] == ("bad" if slow else "good"), step
    by_ref = {s["ref"]: s for s in bisect["steps"]}
    assert by_ref[hashes[-1]]["median"] > 1.5 * by_ref[hashes[0]]["median"]
    # A (good) and B (bad) confirmation runs were queued interleaved.
    ordered = sorted(runs, key=lambda r: r["created_at"])[:4]
    assert [r["ref"] for r in ordered] == [hashes[0], hashes[-1]] * 2
    assert listed["count"] == 1 and listed["items"][0]["first_bad"] == hashes[SLOW_FROM]
    assert runner.poll() is None
