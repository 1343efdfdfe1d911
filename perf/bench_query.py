"""Issue #18's target: a group-by over every event of a 1M-event trace, through the query
API's service (sandbox, limits, JSON values), in under 1 s.

Run: `python perf/bench_query.py [--scale 6] [--repeat 5]`. The trace is the real H200 GPT
trace repeated `--scale` times (`_bench.scaled_trace`; x6 is 1.12M events), ingested once
into a scratch SQLite database and blob store; then each query runs `--repeat` times
through `backend.services.query.run_query` (a child process with a fresh sandbox per
run, as each API request gets; the first run also starts the forkserver) and the median,
min and max wall time are printed, with DuckDB's own `elapsed_ms`.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from _bench import ingest_here, scaled_trace

QUERIES = {
    "SELECT 1 (the fixed cost: trace row, child process, sandbox)": "SELECT 1",
    "group-by kind over all events": (
        "SELECT kind, count(*) AS n, sum(dur_ns) AS total_ns, avg(dur_ns) AS mean_ns "
        "FROM events GROUP BY kind ORDER BY total_ns DESC"
    ),
    "group-by name over all events (top 20)": (
        "SELECT name, count(*) AS n, sum(dur_ns) AS total_ns FROM events "
        "GROUP BY name ORDER BY total_ns DESC LIMIT 20"
    ),
    "top kernels": (
        "SELECT name, count(*) AS n, sum(dur_ns) AS total_ns FROM kernels "
        "GROUP BY name ORDER BY total_ns DESC LIMIT 10"
    ),
    "launch delay percentiles (flows join)": (
        "SELECT launch_name, count(*) AS n, quantile_cont(launch_delay_ns, 0.5) AS p50, "
        "quantile_cont(launch_delay_ns, 0.99) AS p99 FROM flows GROUP BY launch_name"
    ),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scale", type=int, default=6)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    trace = scaled_trace(args.scale)
    with tempfile.TemporaryDirectory(prefix="bench-query-") as tmp:
        url = f"sqlite:///{Path(tmp) / 'perfdash.db'}"
        trace_id, ingest_s = ingest_here(trace, url, Path(tmp) / "var")
        from sqlmodel import Session

        from backend.core.db import get_engine
        from backend.services.query import run_query

        machine = platform.processor() or platform.machine()
        print(f"# {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {machine}, {os.cpu_count()} CPUs, "
              f"{trace.name}, ingest {ingest_s:.1f} s")  # fmt: skip
        with Session(get_engine()) as session:
            count = run_query(
                session=session, trace_id=trace_id, sql="SELECT count(*) FROM events", limit=1
            ).rows[0][0]
            print(f"# {count:,} events; QUERY_THREADS=2 (default)")
            print("| query | median s | min-max s | DuckDB elapsed_ms (median) |")
            print("|---|---|---|---|")
            for label, sql in QUERIES.items():
                walls, inner = [], []
                for _ in range(args.repeat):
                    t = time.perf_counter()
                    result = run_query(session=session, trace_id=trace_id, sql=sql, limit=1000)
                    walls.append(time.perf_counter() - t)
                    inner.append(result.elapsed_ms)
                print(f"| {label} | {statistics.median(walls):.3f} | {min(walls):.3f}-"
                      f"{max(walls):.3f} | {statistics.median(inner):.0f} |")  # fmt: skip


if __name__ == "__main__":
    main()
