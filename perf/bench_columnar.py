"""Issue #17's torch.profiler targets in one run: perfdash end to end (upload accepted ->
`ready`) on SQLite and on PostgreSQL against traceinsight 0.6.1's parse of the same file,
with the decode floor beside it, on the real H200 trace and a 10x copy.

Run: `python perf/bench_columnar.py [--scale 10] [--repeat 3] [--repeat-large N]
[--anchor-python PATH] [--postgres URL | --no-postgres]` (the anchor's virtualenv:
`python3 -m venv /work/ti-venv && /work/ti-venv/bin/pip install traceinsight==0.6.1`; the
floor reads through adbc-driver-sqlite, a main dependency).

Every row runs in a fresh process (its peak RSS is its own), the rows of one input in turn,
`--repeat` times; the table shows medians with the range of seconds. Ratios are taken
within the run.
- anchor: `TraceAnalysis(trace_dir=...)` of traceinsight 0.6.1, HTA's current release.
- floor: isal gunzip plus a typed msgspec decode of only the fields an ingest reads
  (`_columnar_proto.py decode`), storing nothing.
- perfdash -> SQLite / PostgreSQL: `accept_upload` + `ingest_trace`, the real services.
  Bytes per stored event: the trace's dataset (`events.parquet`) plus the database's growth
  over an empty migrated one (kernel stats, summary, timeline index); the raw upload is not
  counted. The dataset's share is printed too.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _bench import hta_parse, perfdash_ingest, scaled_trace, scratch_postgres
from bench_columnar_floor import DEFAULT_ANCHOR, empty_db_bytes, proto, sqlite_bytes

ANCHOR = "anchor: traceinsight 0.6.1 parse"
FLOOR = "floor: isal + msgspec typed decode"
SQLITE = "perfdash -> SQLite (end to end)"
POSTGRES = "perfdash -> PostgreSQL (end to end)"


def dataset_bytes(data_dir: Path) -> int:
    """Bytes of every dataset file under the run's blob store."""
    root = data_dir / "blobs" / "datasets"
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def on_sqlite(path: Path, tmp: Path, empty: int) -> dict[str, Any]:
    run = tmp / f"sqlite-{len(list(tmp.glob('sqlite-*')))}"
    db = run / "perfdash.db"
    result = perfdash_ingest(path, f"sqlite:///{db}", run)
    data = dataset_bytes(run / "var")
    return result | {"bytes": data + sqlite_bytes(db) - empty, "dataset_bytes": data}


def on_postgres(path: Path, tmp: Path, url: str) -> dict[str, Any]:
    import psycopg
    from sqlalchemy.engine import make_url

    run = tmp / f"pg-{len(list(tmp.glob('pg-*')))}"
    with scratch_postgres(url, "columnar") as db_url:
        plain = make_url(db_url).set(drivername="postgresql").render_as_string(False)
        with psycopg.connect(plain) as conn:
            before = conn.execute("SELECT pg_database_size(current_database())").fetchone()
        result = perfdash_ingest(path, db_url, run)
        with psycopg.connect(plain) as conn:
            conn.execute("CHECKPOINT")
            after = conn.execute("SELECT pg_database_size(current_database())").fetchone()
    data = dataset_bytes(run / "var")
    grown = int(after[0]) - int(before[0]) if before and after else 0
    return result | {"bytes": data + grown, "dataset_bytes": data}


def measure(
    path: Path, tmp: Path, anchor: Path | None, postgres: str | None
) -> dict[str, Callable[[], dict[str, Any]]]:
    empty = empty_db_bytes(tmp)
    rows: dict[str, Callable[[], dict[str, Any]]] = {}
    if anchor is not None:
        rows[ANCHOR] = lambda: hta_parse(path, anchor, tmp)
    rows[FLOOR] = lambda: proto("decode", path)
    rows[SQLITE] = lambda: on_sqlite(path, tmp, empty)
    if postgres:
        rows[POSTGRES] = lambda: on_postgres(path, tmp, postgres)
    return rows


def median(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.median(float(r[key]) for r in runs)


def report(label: str, results: dict[str, list[dict[str, Any]]]) -> dict[str, float]:
    events = int(results[SQLITE][-1]["events"])
    print(f"\n{label}: {events:,} stored events")
    head = (
        f"{'row':38} {'seconds':>8} {'(min-max)':>13} {'events/s':>10} {'RSS MB':>7} "
        f"{'B/event':>16}"
    )
    print(head + "\n" + "-" * len(head))
    for row, runs in results.items():
        secs = median(runs, "seconds")
        lo, hi = min(r["seconds"] for r in runs), max(r["seconds"] for r in runs)
        per = ""
        if "bytes" in runs[0]:
            whole, data = median(runs, "bytes") / events, median(runs, "dataset_bytes") / events
            per = f"{whole:.1f} ({data:.1f} data)"
        print(
            f"{row:38} {secs:8.2f} {f'({lo:.2f}-{hi:.2f})':>13} {events / secs:>10,.0f} "
            f"{median(runs, 'rss_mb'):7.0f} {per:>16}"
        )
    secs = {row: median(runs, "seconds") for row, runs in results.items()}
    if ANCHOR in secs:
        for row in (FLOOR, SQLITE, POSTGRES):
            if row in secs:
                print(f"  ratio anchor / {row.split(' (')[0]:28} {secs[ANCHOR] / secs[row]:6.1f}x")
    return {row: median(runs, "rss_mb") for row, runs in results.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=10, help="size of the larger input (x base)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of every row (medians shown)")
    ap.add_argument(
        "--repeat-large", type=int, default=None, help="runs on the larger input (or --repeat)"
    )
    ap.add_argument("--anchor-python", type=Path, default=DEFAULT_ANCHOR)
    ap.add_argument("--postgres", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    ap.add_argument("--no-postgres", action="store_true")
    args = ap.parse_args()
    anchor = args.anchor_python if args.anchor_python.exists() else None
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"# {datetime.now(UTC):%Y-%m-%d %H:%M} UTC  {platform.node()}  {platform.machine()}  "
        f"{os.cpu_count()} CPUs  python {platform.python_version()}  load average {load}"
    )
    if anchor is None:
        print(f"# no anchor: {args.anchor_python} does not exist")
    rss: dict[int, dict[str, float]] = {}
    for scale in sorted({1, args.scale}):
        path = scaled_trace(scale)
        with tempfile.TemporaryDirectory() as d:
            rows = measure(path, Path(d), anchor, None if args.no_postgres else args.postgres)
            results: dict[str, list[dict[str, Any]]] = {row: [] for row in rows}
            repeat = args.repeat if scale == 1 else (args.repeat_large or args.repeat)
            for _ in range(repeat):  # interleaved: a busy spell hits every row alike
                for row, run in rows.items():
                    results[row].append(run())
            rss[scale] = report(f"{path.name} (x{scale})", results)
    if len(rss) == 2:
        small, large = (rss[s] for s in sorted(rss))
        for row in (SQLITE, POSTGRES):
            if row in small:
                print(
                    f"  peak RSS growth for {args.scale}x the events, {row}: "
                    f"{large[row] / small[row]:.2f}x ({small[row]:.0f} -> {large[row]:.0f} MB)"
                )
    print(f"# load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
