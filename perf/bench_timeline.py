"""Timeline benchmark: a 1M-event trace in SQLite and PostgreSQL, API latency per window
size and of name search (the browser side: `perf/bench_timeline_ui.py`).

Issue #17's targets: any window (`max_items=5000`) in p95 under 50 ms, name search under
100 ms. Windows read the level-of-detail index in SQL and raw events from the trace's
Parquet dataset (DuckDB); search reads the name table in SQL and the matches from the
dataset.

The trace is the real H200 GPT trace in perf/data repeated with shifted times (and
shifted correlation ids, so launches stay distinct) until it has about --events events;
it goes through the normal ingest path, which builds the timeline index.

Usage: .venv/bin/python perf/bench_timeline.py [--events 1000000] [--skip-postgres]
"""

from __future__ import annotations

import argparse
import gzip
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
from _bench import ingest_here

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "perf" / "data" / "h200_gpt_12l.pt.trace.json.gz"
POSTGRES_ADMIN = "postgresql://postgres@127.0.0.1:5432/test"
PG_DB = "perfdash_bench_timeline"
MAX_ITEMS = 5000
# Name searches a user types: a kernel family, an op, a common substring, a rare one.
SEARCHES = ("gemm", "aten::linear", "elementwise", "nccl", "ProfilerStep")


def synthesize(target: int, out: Path) -> int:
    """Repeat the source trace's events with shifted ts/correlation until `target` events."""
    doc = orjson.loads(gzip.decompress(SOURCE.read_bytes()))
    events = [e for e in doc["traceEvents"] if isinstance(e, dict)]
    timed = [e for e in events if e.get("ph") != "M" and isinstance(e.get("ts"), int | float)]
    start = min(float(e["ts"]) for e in timed)
    span = max(float(e["ts"]) + float(e.get("dur", 0)) for e in timed) - start + 1000.0
    copies = max(1, round(target / len(timed)))
    out_events = [e for e in events if e.get("ph") == "M"]
    for k in range(copies):
        for e in timed:
            c = dict(e)
            c["ts"] = float(e["ts"]) + k * span
            args = e.get("args")
            if isinstance(args, dict) and "correlation" in args:
                c["args"] = {**args, "correlation": args["correlation"] + k * 10_000_000}
            out_events.append(c)
    doc["traceEvents"] = out_events
    out.write_bytes(gzip.compress(orjson.dumps(doc), compresslevel=1))
    return len(out_events)


def windows(t0: int, t1: int, seed: int = 7) -> list[tuple[int, int]]:
    """Windows from the full trace down to 10 µs (x4 steps), 12 random positions each."""
    rng, out, width = random.Random(seed), [(t0, t1)], t1 - t0
    while width > 10_000:
        width = max(10_000, width // 4)
        out += [(s, s + width) for s in (rng.randint(t0, t1 - width) for _ in range(12))]
    return out


def api_latency(trace_id: str) -> dict[str, Any]:
    """p50/p95/max of GET /timeline over all windows, through the real FastAPI app."""
    from fastapi.testclient import TestClient

    from backend.main import create_app

    with TestClient(create_app()) as client:
        base = f"/api/v1/traces/{trace_id}/timeline"
        full = client.get(base).json()
        times, modes, worst = [], {"blocks": 0, "events": 0}, 0
        for ws, we in windows(full["trace_start_ns"], full["trace_end_ns"]):
            t = time.perf_counter()
            body = client.get(base, params={"start_ns": ws, "end_ns": we, "max_items": MAX_ITEMS})
            times.append(time.perf_counter() - t)
            data = body.json()
            assert len(data["items"]) <= MAX_ITEMS, (ws, we)
            modes[data["mode"]] += 1
            worst = max(worst, len(data["items"]))
        searches = []
        for query in SEARCHES:
            for _ in range(5):
                t = time.perf_counter()
                found = client.get(f"{base}/search", params={"q": query})
                searches.append(time.perf_counter() - t)
                assert found.status_code == 200, found.text
    return {
        **_quantiles("window", times), "modes": modes, "max_items_returned": worst,
        **_quantiles("search", searches),
    }  # fmt: skip


def _quantiles(label: str, times: list[float]) -> dict[str, Any]:
    times = sorted(times)
    return {
        f"{label}s": len(times), f"{label}_p50_ms": round(1000 * statistics.median(times), 1),
        f"{label}_p95_ms": round(1000 * times[int(0.95 * (len(times) - 1))], 1),
        f"{label}_max_ms": round(1000 * times[-1], 1),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--skip-postgres", action="store_true")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-timeline-"))
    trace = tmp / "gpt_repeated.pt.trace.json.gz"
    n = synthesize(args.events, trace)
    print(f"synthesized {n:,} events ({trace.stat().st_size / 1e6:.0f} MB gz)", flush=True)
    targets = [("sqlite", f"sqlite:///{tmp / 'sqlite' / 'perfdash.db'}", tmp / "sqlite")]
    if not args.skip_postgres:
        import psycopg

        with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{PG_DB}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{PG_DB}"')
        pg = f"postgresql+psycopg://postgres@127.0.0.1:5432/{PG_DB}"
        targets.append(("postgresql", pg, tmp / "pg"))
    for name, url, data_dir in targets:
        trace_id, seconds = ingest_here(trace, url, data_dir)
        print(f"[{name}] ingest {seconds:.1f} s", flush=True)
        print(f"[{name}] API {api_latency(trace_id)}", flush=True)


if __name__ == "__main__":
    main()
