"""Issue 11: the all-reduce benchmark through perfdash's own Celery path on a multi-GPU host,
checked against a plain torch.distributed loop in the same run.

Starts the embedded `perfdash serve` and `perfdash worker --queues gpu --concurrency 1`,
applies `allreduce.yaml`, queues one sweep run through the API, waits, then runs
`reference_allreduce.py` once the GPUs are idle. Writes OUT_DIR/allreduce_compare.json.

    python perf/multigpu/run_allreduce.py OUT_DIR
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "bench_proof"))
import run_proof  # noqa: E402  (the proof's process helpers: start/stop/wait)


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    data = Path(os.environ.get("PERFDASH_DATA_DIR", "/tmp/perfdash-multigpu"))
    shutil.rmtree(data, ignore_errors=True)
    env = {**os.environ, "PERFDASH_DATA_DIR": str(data), "PERFDASH_SEED_SAMPLES": "false"}
    env.update(NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1", NVSHMEM_DISABLE_NVLS="1")
    url = run_proof.URL
    serve = run_proof._start(
        ["serve", "--no-samples", "--port", str(run_proof.PORT)], env, out / "serve.log"
    )
    run_proof._wait_healthy()
    worker = run_proof._start(
        ["worker", "--queues", "gpu", "--concurrency", "1"], env, out / "worker.log"
    )
    try:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "workers.cli",
                "bench",
                "apply",
                str(HERE / "allreduce.yaml"),
                "--url",
                url,
            ],
            check=True,
        )
        run = httpx.post(f"{url}/api/v1/benchmarks/allreduce-nccl/runs", timeout=30).json()
        (done,) = run_proof._wait_runs([run["id"]], timeout_s=400)
        runners = httpx.get(f"{url}/api/v1/runners").json()
    finally:
        run_proof._stop(worker)
        run_proof._stop(serve)
    sizes = [p["params"]["size_bytes"] for p in done["results"]]
    ref = subprocess.run(
        [sys.executable, str(HERE / "reference_allreduce.py"), *map(str, sizes)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    reference = json.loads(ref.stdout.strip().splitlines()[-1])
    by_size = {r["size_bytes"]: r for r in reference["rows"]}
    rows = []
    for point in done["results"]:
        size = point["params"]["size_bytes"]
        ours = next(m["value"] for m in point["metrics"] if m["metric"] == "busbw_gbps")
        theirs = by_size[size]["busbw_gbps"]
        rows.append(
            {
                "size_bytes": size,
                "perfdash_busbw_gbps": ours,
                "torch_distributed_busbw_gbps": theirs,
                "ratio": ours / theirs,
            }
        )
    doc = {
        "status": done["status"],
        "error": done.get("error"),
        "rows": rows,
        "world_size": reference["world_size"],
        "runners": runners,
        "run": done,
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    (out / "allreduce_compare.json").write_text(json.dumps(doc, indent=1))
    print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
