"""The GPU guard end to end: a real worker whose runner sees a scripted NVML.

API -> Redis -> `perfdash worker` -> runner subprocess (with `tests/bench/fake_nvml`
first on PYTHONPATH, so `import pynvml` gets the test double serving the H200 probe's
sustained-GEMM samples and a foreign process) -> metrics push -> API. The stored run and
the pushed metric run must both carry the flags; only NVML is fake.
"""

from __future__ import annotations

import gzip
import json
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
from tests.conftest import fresh_database, settings_on
from tests.real_worker import redis_broker, worker_process

pytestmark = pytest.mark.integration
REDIS_URL = os.environ.get("PERFDASH_TEST_GUARD_REDIS_URL", "redis://127.0.0.1:6379/13")
HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PROBE = json.loads(
    gzip.decompress((ROOT / "perf/gpu_guard/results/nvml_probe_h200.json.gz").read_bytes())
)
FOREIGN_PID = 1  # init: never the runner's descendant


@pytest.fixture(scope="module")
def guard_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    folder = tmp_path_factory.mktemp("guard")
    sustained = [s for s in PROBE["samples"] if s["phase"] == "sustained"][50:]
    # The foreign process uses the GPU (NVML's per-process samples give it 60 % SM), so it
    # contends; a mere holder would be `other_process_present` (issue #37).
    busy = {"pids": ["self", FOREIGN_PID], "use": {str(FOREIGN_PID): 60}}
    scenario = {"gpus": [{"samples": [{**s, **busy} for s in sustained]}]}
    (folder / "nvml.json").write_text(json.dumps(scenario))
    with (
        pytest.MonkeyPatch.context() as monkeypatch,
        fresh_database("sqlite", folder) as database_url,
        settings_on(database_url, folder, monkeypatch),
        redis_broker(monkeypatch, REDIS_URL) as settings,
    ):
        path = os.pathsep.join([str(HERE / "fake_nvml"), os.environ.get("PYTHONPATH", "")])
        monkeypatch.setenv("PYTHONPATH", path)
        monkeypatch.setenv("NVIDIA_FAKE_NVML", str(folder / "nvml.json"))
        # The probe's median SM clock is 73 % of max: above 0.7, so no `low_clock` flag if
        # (and only if) the setting reaches the runner.
        monkeypatch.setenv("PERFDASH_BENCH_MIN_CLOCK_FRACTION", "0.7")
        # A command's window is short (a few 20 ms samples): judge it from one sample on, so
        # the flags do not hang on the machine's speed, and the setting must reach the runner.
        monkeypatch.setenv("PERFDASH_BENCH_THROTTLE_MIN_SAMPLES", "1")
        yield settings


@pytest.fixture(scope="module")
def worker(
    guard_env: Settings, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[subprocess.Popen[bytes]]:
    with worker_process("gpu", tmp_path_factory.mktemp("worker") / "worker.log") as proc:
        yield proc


def _wait(client: TestClient, path: str, timeout_s: float = 120) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        body = client.get(path).json()
        if body["status"] in ("succeeded", "failed"):
            return body
        time.sleep(0.3)
    raise AssertionError(f"{path} still {body['status']} after {timeout_s}s")


def test_flags_reach_the_run_and_the_pushed_metric_run(
    worker: subprocess.Popen[bytes], guard_env: Settings
) -> None:
    from backend.main import create_app

    with Session(get_engine()) as session:
        admin, _ = create_token(session, "admin", ["admin"])
    auth = {"Authorization": f"Bearer {admin}"}
    spec = {
        "name": "guarded", "kind": "command", "project": "guard", "queue": "gpu",
        "command": [sys.executable, str(HERE / "data" / "fake_bench.py"), "--format", "gbench",
                    "--size", "{size}"],
        "params": {"size": 2},
        "settle": {"idle_timeout_s": 0, "max_temp_c": 95},
    }  # fmt: skip
    with TestClient(create_app()) as client:
        stored = client.post("/api/v1/benchmarks", json=spec, headers=auth)
        assert stored.status_code == 200, stored.text
        queued = client.post("/api/v1/benchmarks/guarded/runs")
        assert queued.status_code == 202, queued.text
        run = _wait(client, f"/api/v1/benchmark-runs/{queued.json()['id']}")
        assert run["status"] == "succeeded", run["error"]

        flags = {(f["flag"], f["reason"]) for f in run["flags"]}
        assert flags == {("throttled", "sw_power_cap"), ("contended", "other_process"),
                         ("unlocked", "boost_clocks")}  # fmt: skip
        assert run["environment"]["flags"] == run["flags"]
        gpu = run["environment"]["gpu_state"]["gpus"][0]
        assert gpu["samples"] >= 2 and gpu["series"]["sm_mhz"]
        assert gpu["foreign_pids"] == [FOREIGN_PID] and gpu["name"] == PROBE["static"]["name"]
        # settle ran (idle wait only: a command times itself) and did not converge: busy GPU.
        settle = run["environment"]["settle"]
        assert settle["steady"] == {"skipped": "a command times itself"}
        assert not settle["idle"]["converged"] and "other processes" in settle["idle"]["why"]

        pushed = client.get("/api/v1/metrics/runs", params={"project": "guard"}).json()["items"]
        assert pushed and all(m["environment"]["flags"] == run["flags"] for m in pushed)
        assert "series" not in pushed[0]["environment"]["gpu_state"]["gpus"][0]
        assert worker.poll() is None
