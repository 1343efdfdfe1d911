"""`GET /api/v1/traces` over 10,000 traces on SQLite and PostgreSQL (issue 24).

Run: `python perf/bench_trace_list.py [--traces 10000] [--postgres URL]`.

Each engine gets a fresh, migrated database holding `--traces` rows (12 projects, 2
formats, one in ten failed, a quarter tagged `h200`), inserted straight into the table.
Then every request below is sent 7 times in-process (FastAPI's TestClient, no network)
and the median wall time is printed per engine, in milliseconds, with the rows it found.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _bench import scratch_postgres

QUERIES: list[tuple[str, dict[str, Any]]] = [
    ("newest 50", {}),
    ("page 100 (offset 4,950)", {"offset": 4950}),
    ("sort name asc", {"sort": "name", "order": "asc"}),
    ("sort events desc", {"sort": "events"}),
    ("sort size asc, offset 9,000", {"sort": "size", "order": "asc", "offset": 9000}),
    ("project", {"project": "proj-07"}),
    ("status failed", {"status": "failed"}),
    ("tag h200", {"tag": "h200"}),
    ("search 'STEP-012'", {"q": "STEP-012"}),
    ("created range (1 week)", {"created_from": "2026-03-01", "created_to": "2026-03-08"}),
    ("project+tag+sort size", {"project": "proj-04", "tag": "h200", "sort": "size"}),
]


def _rows(n: int) -> list[dict[str, Any]]:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    return [
        {
            "name": f"run-{i % 977:03d}-step-{i:05d}.pt.trace.json.gz",
            "project": f"proj-{i % 12:02d}",
            "format": ("torch_profiler", "nsys_sqlite")[i % 2],
            "status": "failed" if i % 10 == 9 else "ready",
            "error": "not a trace" if i % 10 == 9 else None,
            "size_bytes": (i * 7919) % 500_000_000,
            "event_counts": {"kernel": (i * 31) % 90_000, "cpu_op": i % 5000},
            "tags": ["h200", "fp8"] if i % 4 == 0 else ["a100"],
            "created_at": start + timedelta(minutes=17 * i),
        }
        for i in range(n)
    ]


def _measure(database_url: str, n: int) -> list[tuple[str, float, int]]:
    from fastapi.testclient import TestClient

    from backend.core.config import get_settings
    from backend.core.db import get_engine
    from backend.core.migrate import upgrade_database
    from backend.main import create_app
    from tests.factories import insert_traces

    os.environ["PERFDASH_DATABASE_URL"] = database_url
    for cached in (get_settings, get_engine):
        cached.cache_clear()
    upgrade_database()
    insert_traces(get_engine(), _rows(n))
    results = []
    with TestClient(create_app()) as client:
        client.get("/api/v1/traces")  # warm: connections, caches
        for label, params in [*QUERIES, ("facets", {})]:
            path = "/api/v1/traces/facets" if label == "facets" else "/api/v1/traces"
            times, found = [], 0
            for _ in range(7):
                t0 = time.perf_counter()
                response = client.get(path, params=params)
                times.append((time.perf_counter() - t0) * 1000)
                assert response.status_code == 200, response.text
                found = response.json().get("count", 0)
            results.append((label, statistics.median(times), found))
    get_engine().dispose()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=10_000)
    parser.add_argument("--postgres", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["PERFDASH_DATA_DIR"] = tmp
        os.environ["PERFDASH_BROKER_URL"] = ""
        table = {"sqlite": _measure(f"sqlite:///{tmp}/perfdash.db", args.traces)}
        with scratch_postgres(args.postgres, "list") as url:
            table["postgres"] = _measure(url, args.traces)
    print(f"{args.traces:,} traces; median of 7 requests, ms (rows matched)")
    print(f"{'request':32} {'sqlite':>16} {'postgres':>16}")
    for (label, lite, n), (_, pg, m) in zip(table["sqlite"], table["postgres"], strict=True):
        print(f"{label:32} {lite:9.1f} ({n:>5}) {pg:9.1f} ({m:>5})")


if __name__ == "__main__":
    main()
