"""Store a benchmark run whose GPU state is the H200 probe's sustained GEMM, for the run page.

A CPU host has no NVML, so the run page's GPU-state card is rendered from this: the real
`GpuMonitor` replays the probe's 1,500 NVML samples (perf/gpu_guard/results, through the
test double `tests/bench/fake_nvml`), the real `evaluate` flags them, and the real
`finish_run` stores the run and pushes its metrics. The GPU state and flags are the
probe's; the per-iteration times are derived from it (the probe's sustained 654.9 TFLOP/s,
each sample scaled by the SM clock of its moment), not measured by the harness.

    PERFDASH_DATA_DIR=VAR python perf/gpu_guard/probe_run.py   # prints the run id
    PERFDASH_DATA_DIR=VAR perfdash serve --no-worker --no-samples --port 8799
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import sys
import uuid
from pathlib import Path
from typing import Any

from sqlmodel import Session

from backend.core.clock import utc_now
from backend.core.db import get_engine
from backend.core.migrate import upgrade_database
from backend.models.benchmarks import BenchmarkRun, BenchmarkSpecCreate, RunStatus
from backend.services.benchmarks import finish_run
from backend.services.benchmarks.specs import upsert_spec
from workers.bench.fingerprint import perfdash_version
from workers.bench.gpu_flags import evaluate
from workers.bench.gpu_monitor import GpuMonitor

ROOT = Path(__file__).resolve().parents[2]
PROBE = json.loads(
    gzip.decompress((ROOT / "perf/gpu_guard/results/nvml_probe_h200.json.gz").read_bytes())
)
N = 8192
FLOPS = 2.0 * N**3


def _fake_nvml(samples: list[dict[str, Any]]) -> Any:
    path = ROOT / "tests/bench/fake_nvml/pynvml.py"
    spec = importlib.util.spec_from_file_location("pynvml", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.configure({"gpus": [{"samples": samples}]})
    return module


def _result() -> dict[str, Any]:
    samples = [{**s, "pids": ["self"]} for s in PROBE["samples"] if s["phase"] == "sustained"]
    nvml = _fake_nvml(samples)

    def probe_time() -> float:  # the probe's own clock at the sample about to be read
        return float(samples[min(nvml._state["cursor"][0] + 1, len(samples) - 1)]["t"])

    monitor = GpuMonitor(nvml, [0], period_s=3600, clock=probe_time)
    with monitor.window("time_ms"):
        for _ in range(len(samples) - 2):
            monitor.sample()
    state = {**monitor.state(), "period_ms": 20}  # the probe's period; the replay has none
    mean_ms = FLOPS / (PROBE["tflops"]["sustained"] * 1e12) * 1e3
    mean_sm = sum(s["sm"] for s in samples) / len(samples)
    times = [round(mean_ms * mean_sm / s["sm"], 5) for s in samples]
    median = sorted(times)[len(times) // 2]
    env = {
        "python": "3.12.3", "perfdash": perfdash_version(), "driver": PROBE["static"]["driver"],
        "torch": "2.11.0", "cuda": "12.8", "rocm": None, "runner": "h200-probe",
        "device": "cuda:0", "gpu_model": PROBE["static"]["name"], "gpu_count": 1,
        "spec_hash": "", "gpu_state": state, "flags": evaluate(state, 0.9),
    }  # fmt: skip
    metrics = [
        {"metric": "time_ms", "unit": "ms", "direction": "lower_is_better", "samples": times},
        {"metric": "tflops", "unit": "TFLOP/s", "direction": "higher_is_better",
         "value": FLOPS / (median / 1e3) / 1e12},
    ]  # fmt: skip
    point = {"params": {"m": N, "n": N, "k": N, "dtype": "bf16"}, "label": "", "metrics": metrics,
             "hash": None, "counts": {"time_ms.flops": FLOPS}, "timer": "cuda_events"}  # fmt: skip
    return {"status": "succeeded", "points": [point], "environment": env, "warnings": [],
            "determinism_hash": None}  # fmt: skip


def main() -> int:
    """Store the spec and the run; print the run's id."""
    upgrade_database()
    spec_in = BenchmarkSpecCreate(
        name="guard-sustained", project="gpu-guard", workload="gemm", deterministic="off",
        params={"m": N, "n": N, "k": N, "dtype": "bf16"}, warmup=5, iters=15000,
        description="bf16 8192^3 sustained: GPU state replayed from the H200 NVML probe",
    )  # fmt: skip
    with Session(get_engine()) as session:
        spec, _ = upsert_spec(session, spec_in)
        assert spec.id is not None
        run = BenchmarkRun(id=uuid.uuid4().hex, spec_id=spec.id, status=RunStatus.RUNNING,
                           runner="h200-probe", spec_hash=spec.spec_hash,
                           started_at=utc_now())  # fmt: skip
        session.add(run)
        session.commit()
        result = _result()
        result["environment"]["spec_hash"] = spec.spec_hash
        finish_run(session, run.id, result, None)
        print(run.id)
    return 0


if __name__ == "__main__":
    sys.exit(main())
