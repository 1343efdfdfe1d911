"""torch.profiler ingest against HTA: end-to-end time and peak RSS, on a real GPU trace and
a 10x larger one, on SQLite and PostgreSQL.

Run: `python perf/bench_ingest.py [--scale 10] [--hta-python PATH] [--postgres URL]`
(or `make bench-ingest`). Inputs:
- `perf/data/h200_gpt_12l.pt.trace.json.gz`: a real trace made on an H200 by
  `tests/data/make_transformer_trace.py` (12-layer GPT, 12 steps, record_shapes: 246k events)
- the same trace repeated `--scale` times, each copy shifted by the trace's span (built once
  into `perf/data/*.xN.pt.trace.json.gz`, which git ignores).

Each measurement runs in a fresh process so its peak RSS is its own:
- perfdash end to end: blob store, parse, bulk insert, kernel stats, summary, timeline
  index, status `ready` (the real `accept_upload` + `ingest_trace` services);
- HTA 0.5's `TraceAnalysis(trace_dir=...)` parse, from its own virtualenv
  (`python -m venv /work/hta-venv && /work/hta-venv/bin/pip install HolisticTraceAnalysis`).
- a floor (SQLite): gunzip, one `orjson.loads` of the whole file, and a raw `executemany`
  of one prebuilt row per stored event into perfdash's own events table (same schema and
  index, in one transaction). No normalisation, stats, summary or timeline index: no ingest
  that stores a row per event can beat it on this machine, so HTA / floor bounds the ratio.
  Its first step alone (gunzip and one `orjson.loads`, nothing stored) is printed too: HTA /
  that bounds the ratio of any ingest that decodes the JSON in Python, whatever it stores.
The anchor is HTA's parse alone; the ratio is HTA seconds / perfdash seconds.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from _bench import (
    PYTHON,
    hta_parse,
    perfdash_env,
    perfdash_ingest,
    run_child,
    scaled_trace,
    scratch_postgres,
)

DEFAULT_HTA = Path("/work/hta-venv/bin/python")
DEFAULT_PG = "postgresql+psycopg://postgres@127.0.0.1:5432/test"

_FLOOR_CHILD = r"""
import gzip, json, resource, sqlite3, sys, time
import orjson
from backend.core.config import get_settings
from backend.core.migrate import upgrade_database
from ingest.parsers.kineto import CATEGORY_KINDS
upgrade_database()
db = get_settings().resolved_database_url.removeprefix("sqlite:///")
conn = sqlite3.connect(db, isolation_level=None)
# no traces row: a raw sqlite3 connection does not enforce the foreign key
t0 = time.perf_counter()
doc = orjson.loads(gzip.decompress(open(sys.argv[1], "rb").read()))
decoded = time.perf_counter() - t0
dumps, kinds = orjson.dumps, CATEGORY_KINDS
rows = [("t", "k", e.get("name"), int(e["ts"] * 1000), int(e.get("dur", 0) * 1000),
         None, None, None, e.get("pid"), e.get("tid"), None,
         dumps(e["args"]).decode() if e.get("args") else None)
        for e in doc["traceEvents"] if e.get("cat") in kinds]
conn.execute("BEGIN")
conn.executemany("INSERT INTO events (trace_id, kind, name, start_ns, dur_ns, rank, device, "
                 "stream, pid, tid, correlation, args) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", rows)
conn.execute("COMMIT")
elapsed = time.perf_counter() - t0
print(json.dumps({"seconds": elapsed, "decode_seconds": decoded, "events": len(rows),
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def floor(path: Path, tmp: Path) -> dict[str, float]:
    env = perfdash_env(f"sqlite:///{tmp / 'floor.db'}", tmp / "f")
    return run_child([PYTHON, "-c", _FLOOR_CHILD, str(path)], env)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=10, help="size of the larger input (x base)")
    ap.add_argument("--hta-python", type=Path, default=DEFAULT_HTA)
    ap.add_argument("--postgres", default=DEFAULT_PG, help="'' to skip PostgreSQL")
    args = ap.parse_args()
    print(
        f"# {datetime.now(UTC):%Y-%m-%d %H:%M} UTC  {platform.node()}  {platform.machine()}  "
        f"{os.cpu_count()} CPUs  python {platform.python_version()}"
    )
    header = (
        f"{'input':28} {'events':>9} {'engine':10} {'seconds':>8} {'events/s':>10} {'RSS MB':>7}"
    )
    print(header)
    print("-" * len(header))
    for scale in sorted({1, args.scale}):
        path = scaled_trace(scale)
        label = f"{path.name[:20]}{'' if scale == 1 else f' x{scale}'}"
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            runs = {"sqlite": perfdash_ingest(path, f"sqlite:///{tmp / 'bench.db'}", tmp / "s")}
            if args.postgres:
                with scratch_postgres(args.postgres, "ingest") as url:
                    runs["postgresql"] = perfdash_ingest(path, url, tmp / "p")
            bound = floor(path, tmp)
            anchor = hta_parse(path, args.hta_python, tmp) if args.hta_python.exists() else None
        events = int(runs["sqlite"]["events"])
        for engine, r in runs.items():
            print(
                f"{label:28} {events:>9,} {engine:10} {r['seconds']:8.2f} "
                f"{events / r['seconds']:>10,.0f} {r['rss_mb']:7.0f}"
            )
        print(
            f"{label:28} {int(bound['events']):>9,} {'floor':10} {bound['seconds']:8.2f} "
            f"{bound['events'] / bound['seconds']:>10,.0f} {bound['rss_mb']:7.0f}"
        )
        if anchor:
            print(
                f"{label:28} {events:>9,} {'HTA parse':10} {anchor['seconds']:8.2f} "
                f"{events / anchor['seconds']:>10,.0f} {anchor['rss_mb']:7.0f}"
            )
            for engine, r in runs.items():
                print(
                    f"  ratio HTA/perfdash ({engine}): {anchor['seconds'] / r['seconds']:.2f}x "
                    f"faster; RSS {r['rss_mb'] / anchor['rss_mb']:.2f}x of HTA's"
                )
            print(f"  ratio HTA/floor (SQLite): {anchor['seconds'] / bound['seconds']:.2f}x")
            decode = bound["decode_seconds"]
            print(
                f"  ratio HTA/decode alone (gunzip + orjson.loads, {decode:.2f} s): "
                f"{anchor['seconds'] / decode:.2f}x"
            )


if __name__ == "__main__":
    main()
