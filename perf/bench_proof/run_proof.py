"""Issue 9's proof: the embedded perfdash runs benchmarks through its Celery path on a GPU.

Starts `perfdash serve` (SQLite, filesystem broker, an ingest worker) and `perfdash worker
--queues gpu --concurrency 1`, applies the specs with `perfdash bench apply`, queues runs
through the HTTP API (the train step three times), waits, then times the same bf16 GEMM
shapes with `triton.testing.do_bench` once the GPU is idle. Writes to OUT_DIR:
`proof.json` (GEMM ratios, determinism hashes), `runs.json` (every run as the API gives
it), `perfdash.db` (a consistent copy of the database), the profiler trace, and the logs.

    python perf/bench_proof/run_proof.py perf/bench_proof/h200.yaml OUT_DIR
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


PORT = _free_port()
URL = f"http://127.0.0.1:{PORT}"
TRAIN_RUNS = 3


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "workers.cli", *args],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def _wait_healthy() -> None:
    for _ in range(300):
        try:
            if httpx.get(f"{URL}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise SystemExit("perfdash serve did not become healthy")


def _wait_runs(ids: list[str], timeout_s: float) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout_s
    while True:
        runs = [httpx.get(f"{URL}/api/v1/benchmark-runs/{i}").json() for i in ids]
        if all(r["status"] in ("succeeded", "failed") for r in runs):
            return runs
        if time.monotonic() > deadline:
            raise SystemExit(f"runs not done after {timeout_s}s: {[r['status'] for r in runs]}")
        time.sleep(1.0)


def _wait_trace(trace_id: str) -> dict[str, Any]:
    for _ in range(240):
        trace: dict[str, Any] = httpx.get(f"{URL}/api/v1/traces/{trace_id}").json()
        if trace["status"] in ("ready", "failed"):
            return trace
        time.sleep(0.5)
    return trace


def triton_tflops(m: int, n: int, k: int) -> float | None:
    """The same bf16 GEMM timed by triton.testing.do_bench (median), or None on CPU."""
    import torch

    if not torch.cuda.is_available():
        return None
    do_bench = importlib.import_module("triton.testing").do_bench  # on the GPU host only

    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    ms = do_bench(lambda: torch.mm(a, b, out=c), warmup=100, rep=500, return_mode="median")
    return 2.0 * m * n * k / (float(ms) / 1e3) / 1e12


def _gemm_rows(run: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for point in run["results"]:
        p = point["params"]
        ours = next(x["value"] for x in point["metrics"] if x["metric"] == "tflops")
        ref = triton_tflops(p["m"], p["n"], p["k"])
        rows.append(
            {
                "shape": f"{p['m']}x{p['n']}x{p['k']}",
                "perfdash_tflops": ours,
                "triton_do_bench_tflops": ref,
                "ratio": ours / ref if ref else None,
            }
        )
    return rows


def _blob_path(data: Path, trace: dict[str, Any]) -> Path | None:
    """Where the blob store keeps a trace's bytes (content-addressed by sha256)."""
    sha = trace.get("blob_sha256")
    path = data / "blobs" / sha[:2] / sha if sha else None
    return path if path is not None and path.exists() else None


def _copy_db(data: Path, out: Path) -> None:
    src = sqlite3.connect(data / "perfdash.db")
    dst = sqlite3.connect(out / "perfdash.db")
    src.backup(dst)
    dst.close()
    src.close()


def _queue_runs(specs: Path) -> dict[str, list[str]]:
    subprocess.run(
        [sys.executable, "-m", "workers.cli", "bench", "apply", str(specs), "--url", URL],
        check=True,
    )
    names = [s["name"] for s in httpx.get(f"{URL}/api/v1/benchmarks").json()["items"]]
    ids: dict[str, list[str]] = {}
    for name in names:
        for _ in range(TRAIN_RUNS if name == "train-step" else 1):
            run = httpx.post(f"{URL}/api/v1/benchmarks/{name}/runs", timeout=30).json()
            ids.setdefault(name, []).append(run["id"])
    return ids


def main() -> int:
    """Run the proof and write its files."""
    specs, out = Path(sys.argv[1]), Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    data = Path(os.environ.get("PERFDASH_DATA_DIR", "/tmp/perfdash-proof"))
    shutil.rmtree(data, ignore_errors=True)
    env = {**os.environ, "PERFDASH_DATA_DIR": str(data), "PERFDASH_SEED_SAMPLES": "false"}
    env.update(NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1", NVSHMEM_DISABLE_NVLS="1")
    started = time.monotonic()
    serve = _start(["serve", "--no-samples", "--port", str(PORT)], env, out / "serve.log")
    _wait_healthy()
    worker = _start(["worker", "--queues", "gpu", "--concurrency", "1"], env, out / "worker.log")
    try:
        ids = _queue_runs(specs)
        runs = _wait_runs([i for group in ids.values() for i in group], timeout_s=420)
        by_id = {r["id"]: r for r in runs}
        train = [by_id[i] for i in ids.get("train-step", [])]
        traces = [_wait_trace(r["trace_id"]) for r in train if r["trace_id"]]
        runners = httpx.get(f"{URL}/api/v1/runners").json()
    finally:
        _stop(worker)
    gemm = _gemm_rows(by_id[ids["gemm-bf16"][0]]) if by_id[ids["gemm-bf16"][0]]["results"] else []
    proof = {
        "gemm_vs_triton": gemm,
        "train_step_hashes": [r["determinism_hash"] for r in train],
        "train_step_identical": len({r["determinism_hash"] for r in train}) == 1,
        "statuses": {r["id"]: [r["status"], r["reason"], r["error"]] for r in runs},
        "traces": [
            {k: t.get(k) for k in ("id", "status", "error", "event_counts")} for t in traces
        ],
        "runners": runners,
        "wall_s": time.monotonic() - started,
    }
    (out / "proof.json").write_text(json.dumps(proof, indent=2))
    (out / "runs.json").write_text(json.dumps(runs))
    _stop(serve)
    _copy_db(data, out)
    if traces:
        sha = _blob_path(data, traces[0])
        if sha is not None:
            shutil.copy(sha, out / "train_step.pt.trace.json.gz")
    print(json.dumps({k: proof[k] for k in ("gemm_vs_triton", "train_step_hashes")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
