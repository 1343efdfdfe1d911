"""Every workload kind, tiny and on the CPU, through a real `perfdash worker` on Redis.

API -> Redis (db 16) -> worker on the `gpu` queue (concurrency 1) -> runner subprocess
-> metrics push (the CI path) + trace upload (the ingest path) -> API. Also the failure
paths: a killed runner, a time limit, a raising workload, a command with bad output;
the worker keeps going after each.
"""

from __future__ import annotations

import os
import subprocess
import sys
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
REDIS_URL = os.environ.get("PERFDASH_TEST_BENCH_REDIS_URL", "redis://127.0.0.1:6379/11")
FAKE_BENCH = Path(__file__).resolve().parent / "data" / "fake_bench.py"
FAST = {"warmup": 1, "iters": 3, "project": "bench-test", "queue": "gpu"}
SPECS: list[dict[str, Any]] = [
    {"name": "gemm", "workload": "gemm", "params": {"n": 32, "k": 32, "dtype": "fp32"},
     "sweep": {"m": [16, 32]}, "profile": True},
    {"name": "sdpa", "workload": "sdpa",
     "params": {"batch": 1, "heads": 2, "seq": 16, "head_dim": 8, "dtype": "fp32"}},
    {"name": "train", "workload": "train_step", "deterministic": "strict", "seed": 3,
     "params": {"layers": 1, "d_model": 32, "heads": 2, "batch": 2, "seq": 8}},
    {"name": "copy", "workload": "copy", "params": {"size_bytes": 4096}},
    {"name": "allreduce", "workload": "allreduce", "params": {"size_bytes": 4096}},
    {"name": "chain", "kind": "callable", "workload": "workers.bench.examples:matmul_chain",
     "params": {"n": 16}},
    {"name": "gbench", "kind": "command", "sweep": {"size": [1, 4]},
     "command": [sys.executable, str(FAKE_BENCH), "--format", "gbench", "--size", "{size}"],
     "params": {}},
]  # fmt: skip


@pytest.fixture(scope="module", params=ENGINES)
def bench_env(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Settings]:
    """Settings on a fresh database of each engine with the broker on this area's own Redis
    database, shared by the module's tests: one worker serves them all (starting one takes
    seconds: Celery, then the capability probe imports torch). Each test stores and runs
    benchmarks of its own names and checks only those runs."""
    folder = tmp_path_factory.mktemp("bench")
    with (
        pytest.MonkeyPatch.context() as monkeypatch,
        fresh_database(request.param, folder) as database_url,
        settings_on(database_url, folder, monkeypatch),
        redis_broker(monkeypatch, REDIS_URL) as redis_backed,
    ):
        yield redis_backed


@pytest.fixture(scope="module")
def gpu_worker(
    bench_env: Settings, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[subprocess.Popen[bytes]]:
    """`perfdash worker --queues gpu,ingest --concurrency 1`, as a GPU host runs it."""
    with worker_process("gpu,ingest", tmp_path_factory.mktemp("worker") / "worker.log") as proc:
        yield proc


def _wait(client: TestClient, path: str, done: tuple[str, ...], timeout_s: float = 180) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        body = client.get(path).json()
        if body["status"] in done:
            return body
        time.sleep(0.3)
    raise AssertionError(f"{path} still {body['status']} after {timeout_s}s")


def _run(client: TestClient, name: str) -> dict[str, Any]:
    queued = client.post(f"/api/v1/benchmarks/{name}/runs")
    assert queued.status_code == 202, queued.text
    return dict(
        _wait(client, f"/api/v1/benchmark-runs/{queued.json()['id']}", ("succeeded", "failed"))
    )


def _metrics(run: dict[str, Any], label: str = "") -> dict[str, dict[str, Any]]:
    point = next(p for p in run["results"] if p["label"] == label)
    return {m["metric"]: m for m in point["metrics"]}


def test_every_workload_kind_runs_through_a_real_worker(
    gpu_worker: subprocess.Popen[bytes], bench_env: Settings
) -> None:
    from backend.main import create_app

    with Session(get_engine()) as session:
        admin, _ = create_token(session, "admin", ["admin"])
    auth = {"Authorization": f"Bearer {admin}"}
    with TestClient(create_app()) as client:
        for spec in SPECS:
            stored = client.post("/api/v1/benchmarks", json={**FAST, **spec}, headers=auth)
            assert stored.status_code == 200, stored.text
        runs = {spec["name"]: _run(client, spec["name"]) for spec in SPECS}
        for name, run in runs.items():
            assert run["status"] == "succeeded", (name, run["error"])
            assert run["environment"]["device"] == "cpu" and run["environment"]["torch"]

        gemm = _metrics(runs["gemm"], "m=32")
        assert len(gemm["time_ms"]["samples"]) == 3 and gemm["tflops"]["value"] > 0
        assert runs["gemm"]["results"][0]["counts"]["time_ms.flops"] == 2 * 16 * 32 * 32
        assert {"fwd_tflops", "fwd_bwd_tflops", "fwd_bwd_time_ms"} <= _metrics(runs["sdpa"]).keys()
        assert _metrics(runs["train"])["tokens_per_s"]["value"] > 0
        assert _metrics(runs["copy"])["bandwidth_gbps"]["value"] > 0
        assert _metrics(runs["allreduce"])["busbw_gbps"]["value"] > 0
        assert len(_metrics(runs["chain"])["chain_ms"]["samples"]) == 10
        assert runs["chain"]["determinism_hash"]
        # A command's documents name their own benchmarks (Google Benchmark's names here).
        assert {p["label"] for p in runs["gbench"]["results"]} == {"BM_copy/1", "BM_copy/4"}

        # The metrics went in through the CI push path, keyed by the run.
        pushed = client.get("/api/v1/metrics/runs", params={"project": "bench-test", "limit": 100})
        benchmarks = {r["benchmark"] for r in pushed.json()["items"]}
        assert {"gemm[m=16]", "gemm[m=32]", "train", "BM_copy/4"} <= benchmarks

        # The profiler trace went through the upload path, got parsed, and is linked.
        trace_id = runs["gemm"]["trace_id"]
        assert trace_id
        trace = _wait(client, f"/api/v1/traces/{trace_id}", ("ready", "failed"))
        assert trace["status"] == "ready", trace["error"]
        assert trace["event_counts"].get("cpu_op", 0) > 0

        # Fixed seed: the training step gives the same hash run after run.
        again = _run(client, "train")
        assert again["determinism_hash"] == runs["train"]["determinism_hash"]

        runners = client.get("/api/v1/runners", params={"live": True}).json()["items"]
        assert runners and runners[0]["queues"] == ["gpu", "ingest"]
        assert "torch" in runners[0]["capabilities"]
        assert gpu_worker.poll() is None


def test_failed_runs_say_why_and_never_block_the_queue(
    gpu_worker: subprocess.Popen[bytes], bench_env: Settings
) -> None:
    from backend.main import create_app

    with Session(get_engine()) as session:
        admin, _ = create_token(session, "admin", ["admin"])
    failing: list[dict[str, Any]] = [
        {"name": "killed", "kind": "callable", "workload": "workers.bench.examples:crash"},
        {"name": "slow", "kind": "callable", "workload": "workers.bench.examples:sleep",
         "timeout_s": 10},
        {"name": "broken", "kind": "callable", "workload": "workers.bench.examples:fail"},
        {"name": "garbage", "kind": "command",
         "command": [sys.executable, str(FAKE_BENCH), "--format", "garbage", "--size", "1"],
         "sweep": {"size": [1]}},
        {"name": "ok", "workload": "copy", "params": {"size_bytes": 1024}},
    ]  # fmt: skip
    with TestClient(create_app()) as client:
        for spec in failing:
            stored = client.post(
                "/api/v1/benchmarks",
                json={**FAST, **spec},
                headers={"Authorization": f"Bearer {admin}"},
            )
            assert stored.status_code == 200, stored.text
        runs = {spec["name"]: _run(client, spec["name"]) for spec in failing}
    assert runs["killed"]["reason"] == "killed" and "SIGKILL" in runs["killed"]["error"]
    assert runs["slow"]["reason"] == "time_limit" and "10 s" in runs["slow"]["error"]
    assert runs["broken"]["reason"] == "error"
    assert "always fails" in runs["broken"]["error"]
    assert runs["garbage"]["reason"] == "error" and "no JSON" in runs["garbage"]["error"]
    assert runs["ok"]["status"] == "succeeded"
    assert all(r["attempts"] == 1 for r in runs.values())
    assert gpu_worker.poll() is None
