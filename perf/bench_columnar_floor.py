"""Anchors for the columnar trace store (issue #17): traceinsight's parse, perfdash today, the
decode floor and a columnar prototype, on the real H200 trace and a 10x copy, in one run.

Run: `python perf/bench_columnar_floor.py [--scale 10] [--repeat 3] [--anchor-python PATH]`
(the anchor's virtualenv: `python3 -m venv /work/ti-venv &&
/work/ti-venv/bin/pip install traceinsight==0.6.1`).

Every row is measured in a fresh process, so its peak RSS is its own; the rows of one input
are run in turn, `--repeat` times, and the table shows medians (with the range of seconds).
- anchor: `traceinsight` 0.6.1 (HTA's current release) `TraceAnalysis(trace_dir=...)` parse.
- perfdash today: end to end into a fresh SQLite database (`_bench.perfdash_ingest`); its
  bytes per event are the database file's growth over an empty migrated one (the raw upload
  lives in the blob store and is not counted).
- gunzip: inflate only, stdlib `zlib` and `isal`, keeping nothing.
- floor: isal gunzip plus a typed `msgspec` decode of only the fields an ingest reads, in
  ~4 MB pieces (`_columnar_proto.py`); nothing is stored. The issue's "floor".
- prototype: the floor, then Arrow columns of the events perfdash stores, one zstd Parquet
  file (plus one for flows) and a DuckDB kernel top-10 over it; bytes per event are the
  events file's size over the stored events.
Untimed checks after the timed rows: the prototype's kernel top-10 equals
`perfdash ingest FILE --json` (name, count, total, mean, min, max, p50, p95) and its per-kind
counts equal perfdash's; on the base trace every stored row equals perfdash's parser output.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _bench import PYTHON, REPO, hta_parse, perfdash_env, perfdash_ingest, run_child, scaled_trace

DEFAULT_ANCHOR = Path("/work/ti-venv/bin/python")
TODAY = "perfdash today -> SQLite"
FLOOR = "floor: isal + msgspec decode"
SORTED = "prototype sorted: floor+Arrow+Parquet+top10"
STREAMED = "prototype streamed: the same, flat memory"
PROTO = str(REPO / "perf" / "_columnar_proto.py")

_MIGRATE_CHILD = r"""
import json
from backend.core.migrate import upgrade_database
upgrade_database()
print(json.dumps({}))
"""

_CLI_CHILD = r"""
import sys
from workers.cli.main import main
sys.exit(main(["ingest", sys.argv[1], "--json", "--no-progress"]))
"""


def sqlite_bytes(db: Path) -> int:
    """The database's size on disk, its write-ahead log included."""
    wal = db.with_name(db.name + "-wal")
    return db.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


def empty_db_bytes(tmp: Path) -> int:
    """Size of a freshly migrated SQLite database: what an ingest's growth is measured from."""
    db = tmp / "empty.db"
    run_child([PYTHON, "-c", _MIGRATE_CHILD], perfdash_env(f"sqlite:///{db}", tmp / "e"))
    return sqlite_bytes(db)


def today(path: Path, tmp: Path, empty: int) -> dict[str, Any]:
    db = tmp / "today.db"
    for old in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        old.unlink(missing_ok=True)
    shutil.rmtree(tmp / "today", ignore_errors=True)
    result = perfdash_ingest(path, f"sqlite:///{db}", tmp / "today")
    return result | {"bytes": sqlite_bytes(db) - empty}


def proto(mode: str, path: Path, *extra: str) -> dict[str, Any]:
    return run_child([PYTHON, PROTO, mode, str(path), *extra], dict(os.environ))


def measure(path: Path, tmp: Path, anchor_python: Path | None) -> dict[str, Callable[[], Any]]:
    """The timed rows of one input, in the order they run."""
    out = tmp / "proto"
    out.mkdir(exist_ok=True)
    empty = empty_db_bytes(tmp)
    rows: dict[str, Callable[[], Any]] = {}
    if anchor_python is not None:
        rows["anchor: traceinsight 0.6.1 parse"] = lambda: hta_parse(path, anchor_python, tmp)
    rows[TODAY] = lambda: today(path, tmp, empty)
    rows["gunzip: zlib (stdlib)"] = lambda: proto("gunzip", path, "zlib")
    rows["gunzip: isal"] = lambda: proto("gunzip", path, "isal")
    rows[FLOOR] = lambda: proto("decode", path)
    rows[SORTED] = lambda: proto("parquet", path, str(out / "sorted"))
    rows[STREAMED] = lambda: proto("parquet-streamed", path, str(out / "streamed"))
    return rows


def median_of(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.median(float(r[key]) for r in runs)


FIELDS = ["name", "count", "total_ns", "mean_ns", "min_ns", "max_ns", "p50_ns", "p95_ns"]


def perfdash_cli(path: Path) -> dict[str, Any]:
    """`perfdash ingest FILE --json`: kernel stats and events per kind, no database."""
    proc = subprocess.run(
        [PYTHON, "-c", _CLI_CHILD, str(path)], capture_output=True, cwd=REPO, check=True
    )
    result: dict[str, Any] = json.loads(proc.stdout)  # indented JSON, not one line
    return result


def check(path: Path, tmp: Path, results: dict[str, list[dict[str, Any]]], full: bool) -> None:
    """Print the prototypes' answers against perfdash's own, field by field."""
    cli = perfdash_cli(path)
    theirs = [{f: k[f] for f in FIELDS} for k in cli["kernels"][:10]]
    for row, folder in ((SORTED, "sorted"), (STREAMED, "streamed")):
        last = results[row][-1]
        same = last["top10"] == theirs
        print(
            f"  {row.split(':')[0]}: kernel top-10 (DuckDB over Parquet) vs `perfdash ingest "
            f"--json` on {', '.join(FIELDS)}: {'equal' if same else 'DIFFERENT'}"
        )
        for ours, their in zip(last["top10"], theirs, strict=False):
            if ours != their:
                print(f"    prototype {ours}\n    perfdash  {their}")
        kinds_same = last["kinds"] == cli["events"]
        print(
            f"  {row.split(':')[0]}: events per kind vs perfdash: "
            f"{'equal' if kinds_same else 'DIFFERENT'} ({sum(last['kinds'].values()):,} stored)"
        )
        if not kinds_same:
            print(f"    prototype {last['kinds']}\n    perfdash  {cli['events']}")
        if full:
            v = proto("verify", path, str(tmp / "proto" / folder / "events.parquet"))
            verdict = "equal" if v["only_prototype"] == v["only_perfdash"] == 0 else "DIFFERENT"
            print(
                f"  {row.split(':')[0]}: every stored row (kind, name, start_ns, dur_ns, device, "
                f"stream, pid, tid, correlation, args) vs perfdash's parser: {verdict} "
                f"({v['rows']:,} rows; {v['only_prototype']} only in the prototype, "
                f"{v['only_perfdash']} only in perfdash)"
            )
            if verdict != "equal":
                print(f"    e.g. {v['example']}")


def report(label: str, results: dict[str, list[dict[str, Any]]], events: int) -> None:
    """The table of medians, the prototypes' breakdowns and the ratios."""
    print(f"\n{label}: {events:,} stored events")
    header = (
        f"{'row':46} {'seconds':>8} {'(min-max)':>13} {'events/s':>10} {'RSS MB':>7} {'B/event':>8}"
    )
    print(header)
    print("-" * len(header))
    for row, runs in results.items():
        secs = median_of(runs, "seconds")
        lo, hi = min(r["seconds"] for r in runs), max(r["seconds"] for r in runs)
        stored = next((k for k in ("bytes", "events_bytes") if k in runs[0]), None)
        per = f"{median_of(runs, stored) / events:8.1f}" if stored else ""
        print(
            f"{row:46} {secs:8.2f} {f'({lo:.2f}-{hi:.2f})':>13} {events / secs:>10,.0f} "
            f"{median_of(runs, 'rss_mb'):7.0f} {per}"
        )
    for row in (SORTED, STREAMED):
        runs = results[row]
        last = runs[-1]
        print(
            f"  {row.split(':')[0]}: decode+columns {median_of(runs, 'arrow_seconds'):.2f} s, "
            f"Parquet write {median_of(runs, 'write_seconds'):.2f} s, DuckDB top-10 "
            f"{median_of(runs, 'query_seconds'):.3f} s; {last['row_groups']} row groups; "
            f"flows.parquet {last['flows']:,} flow events, {last['flows_bytes']:,} B (events + "
            f"flows {(last['events_bytes'] + last['flows_bytes']) / events:.1f} B/event)"
        )
        cols = ", ".join(f"{c} {b / events:.2f}" for c, b in last["column_bytes"].items())
        print(f"    events.parquet B/event by column: {cols}")
    medians = {row: median_of(runs, "seconds") for row, runs in results.items()}
    anchor = next((s for row, s in medians.items() if row.startswith("anchor")), None)
    if anchor is not None:
        for row in (FLOOR, TODAY, SORTED, STREAMED):
            print(f"  ratio anchor / {row.split(':')[0]:34} {anchor / medians[row]:6.1f}x")
    b_now = median_of(results[TODAY], "bytes") / events
    for row in (SORTED, STREAMED):
        b_proto = median_of(results[row], "events_bytes") / events
        print(
            f"  bytes/event: {row.split(':')[0]} {b_proto:.1f} vs today's SQLite {b_now:.0f} "
            f"({b_now / b_proto:.0f}x smaller)"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=10, help="size of the larger input (x base)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of every row (medians shown)")
    ap.add_argument("--anchor-python", type=Path, default=DEFAULT_ANCHOR)
    args = ap.parse_args()
    anchor_python = args.anchor_python if args.anchor_python.exists() else None
    print(
        f"# {datetime.now(UTC):%Y-%m-%d %H:%M} UTC  {platform.node()}  {platform.machine()}  "
        f"{os.cpu_count()} CPUs  python {platform.python_version()}  "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    if anchor_python is None:
        print(f"# no anchor: {args.anchor_python} does not exist")
    for scale in sorted({1, args.scale}):
        path = scaled_trace(scale)
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            rows = measure(path, tmp, anchor_python)
            results: dict[str, list[dict[str, Any]]] = {row: [] for row in rows}
            for _ in range(args.repeat):  # interleaved, so a busy spell hits every row alike
                for row, run in rows.items():
                    results[row].append(run())
            label = f"{path.name} (x{scale})" if scale > 1 else path.name
            report(label, results, int(results[SORTED][-1]["events"]))
            check(path, tmp, results, full=scale == 1)
        print(f"# load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
