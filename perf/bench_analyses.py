"""Issue #35 part 2: every analysis route of a trace, timed cold and warm.

Ingests `perf/data/h200_gpt_12l.pt.trace.json.gz` (with `--ranks N`, an N-rank job: N
copies of it in one tar, each with `distributedInfo.rank` rewritten, uploaded as one
multi-rank trace, `ingest.multirank`) into a scratch SQLite database, then, in a fresh
process per round, requests every analysis route once (cold: the process's first request
of it) and `--warm` more times (warm: the median). The median over `--rounds` rounds is
reported, with the ingest time and, where the code has it, the derive step's time.

Old against new: run this script with the code to measure first on PYTHONPATH, e.g.
`PYTHONPATH=/work/main python perf/bench_analyses.py` for main's numbers, then from this
checkout; the script itself only uses `_bench` and the HTTP API.

    python perf/bench_analyses.py [--ranks 8] [--scale 4] [--rounds 3] [--warm 5]
        [--data DIR] [--out file.json]
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from _bench import REPO, TRACE, perfdash_env, scaled_trace

ROUTES = (
    "operators",
    "operators?group=shape",
    "operators/stacks",
    "steps/breakdown",
    "ranks",
    "collectives",
    "ranges",
    "graphs",
    "memory/ops",
    "compile",
)
_CHILD = """
import json, os, statistics, sys, time
os.environ["PERFDASH_BROKER_URL"] = ""
from fastapi.testclient import TestClient
from backend.main import create_app
trace_id, warm, routes = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(",")
out = {}
with TestClient(create_app()) as client:
    for route in routes:
        times = []
        for _ in range(1 + warm):
            t = time.perf_counter()
            r = client.get(f"/api/v1/traces/{trace_id}/{route}")
            times.append(time.perf_counter() - t)
            assert r.status_code == 200, (route, r.status_code, r.text[:300])
        out[route] = {"cold_s": times[0], "warm_s": statistics.median(times[1:])}
print(json.dumps(out))
"""
_INGEST = """
import json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[4])
from _bench import ingest_here
trace_id, seconds = ingest_here(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]))
from backend.core.config import get_settings
from backend.core.db import get_engine
from sqlmodel import Session
from backend.models import Trace
with Session(get_engine()) as s:
    row = s.get(Trace, trace_id)
    folder = get_settings().blob_dir / "datasets" / trace_id / row.dataset
    events = sum(row.event_counts.values())
derive = [json.loads(p.read_text()).get("seconds") for p in folder.glob("analyses-*.json")]
print(json.dumps({"trace_id": trace_id, "ingest_s": seconds, "events": events,
                  "derive_s": sum(derive) if derive else None}))
"""


def job_archive(ranks: int, folder: Path, base: Path = TRACE) -> Path:
    """The base trace as an N-rank job: one tar of N rank files, ranks rewritten."""
    doc = json.loads(gzip.decompress(base.read_bytes()))
    out = folder / f"job_{ranks}ranks.tar"
    with tarfile.open(out, "w") as tar:
        for rank in range(ranks):
            doc["distributedInfo"] = {**doc.get("distributedInfo", {}), "rank": rank,
                                      "world_size": ranks}  # fmt: skip
            data = gzip.compress(json.dumps(doc).encode(), compresslevel=1)
            info = tarfile.TarInfo(f"rank{rank}.pt.trace.json.gz")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out


def _code() -> Path:
    """The checkout measured: the first PYTHONPATH entry, else this one."""
    first = os.environ.get("PYTHONPATH", "").split(os.pathsep)[0]
    return Path(first).resolve() if first else REPO


def _run(code: list[str], env: dict[str, str]) -> dict[str, Any]:
    """`python -c code...` from the measured checkout (`-c` puts its folder first on
    sys.path); its last stdout line is the JSON result."""
    proc = subprocess.run(
        [sys.executable, "-c", *code], capture_output=True, text=True, env=env,
        cwd=_code(), check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(f"child failed:\n{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ranks", type=int, default=1)
    parser.add_argument(
        "--scale", type=int, default=1, help="each rank is the base trace repeated this many "
        "times (`_bench.scaled_trace`; 4: 745k events a rank, 8 ranks = the issue's 6M job)",
    )  # fmt: skip
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warm", type=int, default=5)
    parser.add_argument("--routes", default=",".join(ROUTES))
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--data", type=Path, help="keep the ingested trace here; a later run with the same "
        "folder times the routes on it without ingesting again (old code on a new dataset)",
    )  # fmt: skip
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_analyses_") as tmp:
        work = args.data or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        db = f"sqlite:///{work / 'bench.db'}"
        env = perfdash_env(db, work / "var") | {"PERFDASH_BROKER_URL": ""}
        kept = work / "ingest.json"
        if kept.exists():
            ingest = json.loads(kept.read_text(encoding="utf-8"))
        else:
            base = scaled_trace(args.scale)
            trace = base if args.ranks == 1 else job_archive(args.ranks, work, base)
            perf = str(Path(__file__).resolve().parent)
            ingest = _run([_INGEST, str(trace), db, str(work / "var"), perf], env)
            kept.write_text(json.dumps(ingest), encoding="utf-8")
        rounds = [
            _run([_CHILD, ingest["trace_id"], str(args.warm), args.routes], env)
            for _ in range(args.rounds)
        ]
    result: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d"),
        "code": str(_code()),
        "ranks": args.ranks,
        "scale": args.scale,
        **{k: ingest[k] for k in ("events", "ingest_s", "derive_s")},
        "routes": {
            route: {
                kind: round(statistics.median(r[route][kind] for r in rounds), 4)
                for kind in ("cold_s", "warm_s")
            }
            for route in args.routes.split(",")
        },
    }
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
