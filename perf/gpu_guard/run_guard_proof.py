"""Issue 22's proof: the GPU guard flags a power-capped sustained GEMM and not a short burst.

Starts the embedded perfdash (`serve` + one `worker --queues gpu`, as issue 9's proof
does, whose helpers this reuses), applies `specs.yaml`, then queues one run at a time
through the HTTP API: the burst after >= 10 s idle, the sustained GEMM, the settled GEMM.
Writes `guard_proof.json` (a row per run: flags, median SM clock and power, TFLOP/s, the
expectation and whether it held), `runs.json` (the runs as the API gives them) and a
consistent copy of `perfdash.db` to OUT_DIR.

    python perf/gpu_guard/run_guard_proof.py perf/gpu_guard/specs.yaml OUT_DIR
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench_proof"))
import run_proof as base

IDLE_BEFORE_BURST_S = 10
ORDER = ("guard-burst", "guard-sustained", "guard-settled")


def _wait_runner(timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if httpx.get(f"{base.URL}/api/v1/runners", params={"live": True}).json()["items"]:
            return
        time.sleep(1.0)
    raise SystemExit("no live runner after the worker started")


def _run(name: str) -> dict[str, Any]:
    queued = httpx.post(f"{base.URL}/api/v1/benchmarks/{name}/runs", timeout=30).json()
    (run,) = base._wait_runs([queued["id"]], timeout_s=400)
    return run


def _row(run: dict[str, Any]) -> dict[str, Any]:
    env = run.get("environment") or {}
    gpus = (env.get("gpu_state") or {}).get("gpus") or [{}]
    gpu = gpus[0]
    summary = gpu.get("summary") or {}

    def median(field: str) -> float | None:
        return (summary.get(field) or {}).get("median")

    metrics = {m["metric"]: m for p in run.get("results", []) for m in p.get("metrics", [])}
    series = gpu.get("series") or {}
    return {
        "name": run["spec_name"],
        "id": run["id"],
        "status": run["status"],
        "error": run["error"],
        "warnings": run["warnings"],
        "flags": [[f["flag"], f["reason"], f["detail"]] for f in run.get("flags", [])],
        "sm_median_mhz": median("sm_mhz"),
        "sm_range_mhz": [(summary.get("sm_mhz") or {}).get(k) for k in ("min", "max")],
        "power_median_w": median("power_w"),
        "power_limit_w": median("power_limit_w"),
        "temp_max_c": (summary.get("temp_c") or {}).get("max"),
        "samples": gpu.get("samples"),
        "reason_shares": gpu.get("reasons"),
        "tflops": (metrics.get("tflops") or {}).get("value"),
        "time_ms_median": statistics.median((metrics.get("time_ms") or {}).get("samples") or [0]),
        "windows": (env.get("gpu_state") or {}).get("windows"),
        "settle": env.get("settle"),
        # a short run's every sample, to judge the burst by hand
        "series": series if (gpu.get("samples") or 0) <= 60 else None,
    }


def _judge(row: dict[str, Any]) -> dict[str, Any]:
    kinds = {(f[0], f[1]) for f in row["flags"]}
    throttled = {f[1] for f in row["flags"] if f[0] == "throttled"}
    if row["name"] == "guard-sustained":
        want, held = "throttled / sw_power_cap", ("throttled", "sw_power_cap") in kinds
    elif row["name"] == "guard-burst":
        want, held = "not throttled", not throttled
    else:
        settle = row["settle"] or {}
        want, held = "settle converged", bool(settle.get("converged"))
    return {**row, "expected": want, "pass": held and row["status"] == "succeeded"}


def start_perfdash(
    out: Path, default_data: str
) -> tuple[Path, dict[str, str], subprocess.Popen[bytes], subprocess.Popen[bytes]]:
    """A fresh embedded perfdash: data folder, environment, `serve` and a `gpu` worker."""
    data = Path(os.environ.get("PERFDASH_DATA_DIR", default_data))
    shutil.rmtree(data, ignore_errors=True)
    env = {**os.environ, "PERFDASH_DATA_DIR": str(data), "PERFDASH_SEED_SAMPLES": "false"}
    serve = base._start(["serve", "--no-samples", "--port", str(base.PORT)], env, out / "serve.log")
    base._wait_healthy()
    worker = base._start(["worker", "--queues", "gpu", "--concurrency", "1"], env,
                         out / "worker.log")  # fmt: skip
    return data, env, serve, worker


def main() -> int:
    """Run the proof and write its files."""
    specs, out = Path(sys.argv[1]), Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    data, _env, serve, worker = start_perfdash(out, "/tmp/perfdash-guard")
    runs: list[dict[str, Any]] = []
    try:
        subprocess.run(
            [sys.executable, "-m", "workers.cli", "bench", "apply", str(specs), "--url", base.URL],
            check=True,
        )
        _wait_runner()
        for name in ORDER:
            time.sleep(IDLE_BEFORE_BURST_S if name == "guard-burst" else 2)
            runs.append(_run(name))
            print(name, runs[-1]["status"], [f["reason"] for f in runs[-1].get("flags", [])],
                  flush=True)  # fmt: skip
    finally:
        base._stop(worker)
    rows = [_judge(_row(r)) for r in runs]
    proof = {"rows": rows, "all_pass": all(r["pass"] for r in rows),
             "wall_s": round(time.monotonic() - started, 1)}  # fmt: skip
    (out / "guard_proof.json").write_text(json.dumps(proof, indent=2))
    (out / "runs.json").write_text(json.dumps(runs))
    base._stop(serve)
    base._copy_db(data, out)
    head = f"{'run':16} {'pass':5} {'SM MHz':>7} {'power W':>8} {'TFLOP/s':>8}  flags"
    print(head)
    for r in rows:
        flags = ", ".join(f"{f[0]}/{f[1]}" for f in r["flags"]) or "-"
        sm, pw, tf = r["sm_median_mhz"], r["power_median_w"], r["tflops"]
        print(f"{r['name']:16} {r['pass']!s:5} {sm or 0:7.0f} {pw or 0:8.1f} {tf or 0:8.1f}  "
              f"{flags}")  # fmt: skip
    return 0 if proof["all_pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
