"""Nsight Systems sqlite into perfdash: events per second, on SQLite and PostgreSQL.

Run: `python perf/bench_nsys.py [--factor 110] [--postgres URL]`. The input is the real H200
train-step export (`tests/data/nsys/train_step.sqlite`, 9,870 events) replicated `--factor`
times by `perf/make_nsys_large.py` (x110: 1.09 M events, 47 MB). Target: 1 M events/s.

Rows, each in a fresh process (events/s = events / wall seconds; RSS = the child's peak):
- `ingest SQLite` / `ingest PostgreSQL`: the product path end to end: `accept_upload` (blob
  store) + `ingest_trace` (detect, parse, bulk insert, stats, summary, timeline index, kernel
  stats, status `ready`, commit);
- `parse + analysis`: `parse_file(...).items` through `TraceAggregator.feed` and the summary,
  no database: the product's Python work before any row is written;
- anchors, not the product: `floor: sqlite3 read` iterates the same SELECTs with the stdlib
  driver and builds nothing (the floor of any path that reads the rows in Python);
  `floor: ADBC -> Arrow -> Parquet` reads the kernel, copy and API-call tables (97% of the
  rows, names joined in SQL) through `adbc-driver-sqlite` into Arrow and writes one zstd
  Parquet file: no Python per row and no args, stats, summary or index (the floor of a
  columnar path).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "perf"))
from _bench import PYTHON, perfdash_ingest, run_child, scratch_postgres  # noqa: E402
from make_nsys_large import build  # noqa: E402

DEFAULT_PG = "postgresql+psycopg://postgres@127.0.0.1:5432/test"

_PARSE = r"""
import json, resource, sys, time
from pathlib import Path
from ingest import parse_file
from ingest.aggregate import TraceAggregator
t0 = time.perf_counter()
parsed, aggregator = parse_file(Path(sys.argv[1])), TraceAggregator()
for _ in aggregator.feed(parsed.items):
    pass
aggregator.summary(parsed.header)
print(json.dumps({"seconds": time.perf_counter() - t0, "events": aggregator.events,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

_SCAN = r"""
import json, resource, sqlite3, sys, time
conn = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
tables = ["CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
          "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS",
          "CUDA_GRAPH_NODE_EVENTS"]
t0 = time.perf_counter()
rows = 0
for t in tables:
    for _ in conn.execute(f"SELECT * FROM {t}"):
        rows += 1
print(json.dumps({"seconds": time.perf_counter() - t0, "events": rows,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

# The columnar floor: the kernel, copy and API-call tables (97% of the rows) read through
# ADBC straight into Arrow (names joined in SQL) and written as one zstd Parquet file: no
# Python per row, no stats, summary or timeline index.
_ARROW = r"""
import json, resource, sys, time
import adbc_driver_sqlite.dbapi as adbc
import pyarrow as pa
import pyarrow.parquet as pq
src, out = sys.argv[1], sys.argv[2]
queries = [
    '''SELECT 'kernel' AS kind, d.value AS name, k.start AS start_ns, k."end" - k.start AS dur_ns,
       k.deviceId AS device, k.streamId AS stream, k.correlationId AS correlation
       FROM CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN StringIds d ON d.id = k.demangledName''',
    '''SELECT 'memcpy' AS kind, 'Memcpy' AS name, m.start AS start_ns,
       m."end" - m.start AS dur_ns, m.deviceId AS device, m.streamId AS stream,
       m.correlationId AS correlation FROM CUPTI_ACTIVITY_KIND_MEMCPY m''',
    '''SELECT 'runtime' AS kind, s.value AS name, r.start AS start_ns,
       r."end" - r.start AS dur_ns, NULL AS device, NULL AS stream,
       r.correlationId AS correlation
       FROM CUPTI_ACTIVITY_KIND_RUNTIME r LEFT JOIN StringIds s ON s.id = r.nameId''',
]
t0 = time.perf_counter()
conn = adbc.connect(src)
n = 0
with pq.ParquetWriter(out, pa.schema([("kind", pa.string()), ("name", pa.string()),
        ("start_ns", pa.int64()), ("dur_ns", pa.int64()), ("device", pa.int64()),
        ("stream", pa.int64()), ("correlation", pa.int64())]), compression="zstd") as w:
    for q in queries:
        cur = conn.cursor()
        cur.execute(q)
        table = cur.fetch_arrow_table()
        table = table.cast(w.schema)
        w.write_table(table)
        n += table.num_rows
        cur.close()
conn.close()
print(json.dumps({"seconds": time.perf_counter() - t0, "events": n,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _child(code: str, args: list[str], env: dict[str, str]) -> dict[str, float]:
    return run_child([PYTHON, "-c", code, *args], env)


def _runs(src: Path, postgres: str, tmp: Path) -> dict[str, dict[str, float]]:
    runs = {
        "ingest SQLite": perfdash_ingest(
            src, f"sqlite:///{tmp / 'ingest' / 'perfdash.db'}", tmp / "ingest"
        )
    }
    if postgres:
        with scratch_postgres(postgres, "nsys") as url:
            runs["ingest PostgreSQL"] = perfdash_ingest(src, url, tmp / "p")
    runs["parse + analysis (no DB)"] = _child(_PARSE, [str(src)], dict(os.environ))
    runs["floor: sqlite3 read"] = _child(_SCAN, [str(src)], dict(os.environ))
    out = tmp / "floor.parquet"
    runs["floor: ADBC -> Arrow -> Parquet"] = _child(_ARROW, [str(src), str(out)], dict(os.environ))
    return runs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--factor", type=int, default=110)
    ap.add_argument("--postgres", default=DEFAULT_PG, help="'' to skip PostgreSQL")
    args = ap.parse_args()
    src = build(args.factor)
    print(
        f"# {datetime.now(UTC):%Y-%m-%d %H:%M} UTC  {platform.node()}  {os.cpu_count()} CPUs  "
        f"python {platform.python_version()}  load {os.getloadavg()[0]:.1f}  "
        f"input {src.name} ({src.stat().st_size / 1e6:.0f} MB)"
    )
    with tempfile.TemporaryDirectory() as d:
        runs = _runs(src, args.postgres, Path(d))
    print(f"{'path':28} {'events':>10} {'seconds':>8} {'events/s':>10} {'RSS MB':>7}")
    for label, r in runs.items():
        rate = r["events"] / r["seconds"]
        events, rss = int(r["events"]), r["rss_mb"]
        print(f"{label:28} {events:>10,} {r['seconds']:8.2f} {rate:>10,.0f} {rss:7.0f}")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"# load average at the end (1, 5, 15 min): {load}")


if __name__ == "__main__":
    main()
