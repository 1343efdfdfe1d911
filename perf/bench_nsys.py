"""Nsight Systems sqlite into perfdash's database: events per second, SQLite and PostgreSQL.

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
  `floor: sqlite3 write` times only the stdlib `executemany` of the same rows, built
  beforehand, into perfdash's `events` table (its index, WAL, the product's PRAGMAs) and the
  commit: the floor of any path that writes the rows from Python; `prototype ATTACH` is one
  `INSERT INTO events ... SELECT` per big table from the export ATTACHed into a perfdash
  SQLite database (args by `json_object`), no Python per row and no stats, summary or index.
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
from _bench import PYTHON, perfdash_env, perfdash_ingest, run_child, scratch_postgres  # noqa: E402
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

# The rows the product writes, built first; only executemany + commit are timed.
_WRITE = r"""
import json, resource, sys, time
from pathlib import Path
import orjson
from sqlmodel import Session
from backend.core.bulk_insert import BATCH_SIZE
from backend.core.db import get_engine
from backend.core.migrate import upgrade_database
from backend.models import Trace
from backend.services.loading.event_store import COLUMNS
from ingest import parse_file
upgrade_database()
engine = get_engine()
with Session(engine) as session:  # a real trace row for the events' foreign key
    trace = Trace(name="x", project="bench", blob_sha256="0" * 64, size_bytes=0)
    session.add(trace)
    session.commit()
    trace_id = trace.id
rows = [(i, trace_id, e.kind.value, e.name, e.start_ns, e.dur_ns, e.rank, e.device, e.stream,
         e.pid, e.tid, e.correlation, orjson.dumps(e.args).decode() if e.args else None)
        for i, e in enumerate(parse_file(Path(sys.argv[1])).events, start=1)]
sql = f"INSERT INTO events ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"
with engine.begin() as conn:
    cursor = conn.connection.driver_connection.cursor()
    t0 = time.perf_counter()
    for i in range(0, len(rows), BATCH_SIZE):
        cursor.executemany(sql, rows[i : i + BATCH_SIZE])
t1 = time.perf_counter()
print(json.dumps({"seconds": t1 - t0, "events": len(rows),
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

# The prototype: the kernel, copy and API-call tables (97% of the rows) straight in SQL.
_ATTACH = r"""
import json, resource, sqlite3, sys, time
from sqlmodel import Session
from backend.core.db import get_engine
from backend.core.migrate import upgrade_database
from backend.models import Trace
upgrade_database()
db, src = sys.argv[1], sys.argv[2]
with Session(get_engine()) as session:  # a real trace row for the events' foreign key
    trace = Trace(name="x", project="bench", blob_sha256="0" * 64, size_bytes=0)
    session.add(trace)
    session.commit()
    trace_id = trace.id
conn = sqlite3.connect(db, isolation_level=None)
cols = "trace_id, kind, name, start_ns, dur_ns, device, stream, pid, tid, correlation, args"
t0 = time.perf_counter()
conn.execute(f"ATTACH DATABASE 'file:{src}?mode=ro' AS src")
conn.execute("BEGIN")
n = conn.execute(f'''INSERT INTO events ({cols})
  SELECT ?, 'kernel', d.value, k.start, k.end - k.start, k.deviceId, k.streamId,
         (k.globalPid >> 24) & 16777215, NULL, k.correlationId,
         json_object('short name', s.value, 'grid', json_array(k.gridX, k.gridY, k.gridZ),
                     'block', json_array(k.blockX, k.blockY, k.blockZ),
                     'registers per thread', k.registersPerThread,
                     'shared memory', k.staticSharedMemory + k.dynamicSharedMemory)
  FROM src.CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN src.StringIds d ON d.id = k.demangledName
  LEFT JOIN src.StringIds s ON s.id = k.shortName''', (trace_id,)).rowcount
n += conn.execute(f'''INSERT INTO events ({cols})
  SELECT ?, 'memcpy', 'Memcpy', m.start, m.end - m.start, m.deviceId, m.streamId,
         (m.globalPid >> 24) & 16777215, NULL, m.correlationId,
         json_object('bytes', m.bytes, 'copy kind', m.copyKind)
  FROM src.CUPTI_ACTIVITY_KIND_MEMCPY m''', (trace_id,)).rowcount
n += conn.execute(f'''INSERT INTO events ({cols})
  SELECT ?, 'runtime', s.value, r.start, r.end - r.start, NULL, NULL,
         (r.globalTid >> 24) & 16777215, r.globalTid & 16777215, r.correlationId,
         json_object('api', CASE r.eventClass WHEN 0 THEN 'runtime' ELSE 'driver' END)
  FROM src.CUPTI_ACTIVITY_KIND_RUNTIME r LEFT JOIN src.StringIds s ON s.id = r.nameId
  WHERE r.eventClass <> 67''', (trace_id,)).rowcount
conn.execute("COMMIT")
print(json.dumps({"seconds": time.perf_counter() - t0, "events": n,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _child(code: str, args: list[str], env: dict[str, str]) -> dict[str, float]:
    return run_child([PYTHON, "-c", code, *args], env)


def _runs(src: Path, postgres: str, tmp: Path) -> dict[str, dict[str, float]]:
    def sqlite_env(name: str) -> dict[str, str]:
        return perfdash_env(f"sqlite:///{tmp / name / 'perfdash.db'}", tmp / name)

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
    runs["floor: sqlite3 write"] = _child(_WRITE, [str(src)], sqlite_env("write"))
    proto = sqlite_env("attach")
    proto_db = proto["PERFDASH_DATABASE_URL"].removeprefix("sqlite:///")
    runs["prototype ATTACH (SQLite)"] = _child(_ATTACH, [proto_db, str(src)], proto)
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
