"""Timeline windows at job size: `GET /timeline/columns` on a 1-rank and an 8-rank job.

Issue #35's target: a window read (`max_items=5000`, all lanes, the canvas renderer's
columns form) in p95 under 100 ms on the 8-rank job (~6M events) and under 50 ms on one
rank, through the real FastAPI app.

Each job (`perf/_job.py`: the H200 trace at 745k events per rank, `distributedInfo`
rewritten per rank) is uploaded as one multi-rank zip and ingested by the real services
into a SQLite database under --data-dir, once: the datasets are kept there and reused
by later runs (--fresh ingests again). Each measurement runs in its own process, so every
run starts with cold caches; the figures are the medians of --runs runs. To measure
another checkout (the before), run this script with PYTHONPATH set to it: the children
import `backend` from there and read the same datasets.

Usage: PYTHONPATH=$PWD .venv/bin/python perf/bench_job_timeline.py [--ranks 1 8] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _bench import ingest_here
from _job import job_archive
from bench_timeline import MAX_ITEMS, windows

DEFAULT_DIR = Path("/tmp/perfdash-bench-job-timeline")
FIGURES = ("first_ms", "window_p50_ms", "window_p95_ms", "window_max_ms")


def _database_url(folder: Path) -> str:
    return f"sqlite:///{folder / 'perfdash.db'}"


def ingested(n_ranks: int, data_dir: Path, *, fresh: bool) -> tuple[Path, str]:
    """The job's folder and trace id, ingested now unless an earlier run left it there."""
    folder = data_dir / f"ranks{n_ranks}"
    marker = folder / "trace_id"
    if marker.is_file() and not fresh:
        return folder, marker.read_text().strip()
    archive = job_archive(n_ranks, data_dir)
    for stale in (folder / "perfdash.db", marker):
        stale.unlink(missing_ok=True)
    folder.mkdir(parents=True, exist_ok=True)
    trace_id, seconds = ingest_here(archive, _database_url(folder), folder / "var")
    print(f"[{n_ranks} ranks] ingested {archive.name} in {seconds:.1f} s", flush=True)
    marker.write_text(trace_id)
    return folder, trace_id


def measure(folder: Path, trace_id: str) -> dict[str, Any]:
    """One run, in this process: every window of `bench_timeline.windows` once."""
    os.environ["PERFDASH_DATA_DIR"] = str(folder / "var")
    os.environ["PERFDASH_DATABASE_URL"] = _database_url(folder)
    os.environ["PERFDASH_BROKER_URL"] = ""
    from fastapi.testclient import TestClient

    from backend.main import create_app

    with TestClient(create_app()) as client:
        base = f"/api/v1/traces/{trace_id}/timeline"
        lanes = client.get(f"{base}/lanes").json()
        t = time.perf_counter()
        client.get(f"{base}/columns", params={"max_items": MAX_ITEMS}).raise_for_status()
        first = time.perf_counter() - t
        times, modes, worst = [], {"blocks": 0, "events": 0}, 0
        for ws, we in windows(lanes["trace_start_ns"], lanes["trace_end_ns"]):
            t = time.perf_counter()
            body = client.get(
                f"{base}/columns", params={"start_ns": ws, "end_ns": we, "max_items": MAX_ITEMS}
            )
            times.append(time.perf_counter() - t)
            data = body.json()
            assert body.status_code == 200 and data["n"] <= MAX_ITEMS, (ws, we, body.text[:300])
            modes[data["mode"]] += 1
            worst = max(worst, data["n"])
    times.sort()
    return {
        "lanes": len(lanes["lanes"]), "windows": len(times), "modes": modes,
        "max_items_returned": worst, "first_ms": round(1000 * first, 1),
        "window_p50_ms": round(1000 * statistics.median(times), 1),
        "window_p95_ms": round(1000 * times[int(0.95 * (len(times) - 1))], 1),
        "window_max_ms": round(1000 * times[-1], 1),
    }  # fmt: skip


def _child(folder: Path, trace_id: str) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--measure", str(folder), trace_id]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"measurement failed:\n{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--fresh", action="store_true", help="ingest again, not reuse")
    parser.add_argument("--measure", nargs=2, metavar=("FOLDER", "TRACE_ID"), help="internal")
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(Path(args.measure[0]), args.measure[1])))
        return
    for n_ranks in args.ranks:
        folder, trace_id = ingested(n_ranks, args.data_dir, fresh=args.fresh)
        runs = [_child(folder, trace_id) for _ in range(args.runs)]
        for i, run in enumerate(runs):
            print(f"[{n_ranks} ranks] run {i + 1}: {run}", flush=True)
        medians = {key: statistics.median(run[key] for run in runs) for key in FIGURES}
        print(f"[{n_ranks} ranks] median of {len(runs)}: {medians}", flush=True)


if __name__ == "__main__":
    main()
