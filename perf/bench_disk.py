"""Bytes per stored event, by format: the trace's dataset (events, timeline pyramid and gaps
as Parquet) plus the SQLite database's growth (kernel stats, summary, lanes, names), over
an empty migrated database. The raw upload is not counted.

Run: `python perf/bench_disk.py [FILE ...]` (default: one real file per format from
perf/data and tests/data, and the 1.09M-event nsys export that `bench_nsys.py` builds).
Small files carry Parquet's fixed cost (footers, dictionaries: a few KB per file), so their
figures are upper bounds; the large inputs show the per-event cost.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from _bench import REPO, perfdash_ingest
from bench_columnar import dataset_bytes
from bench_columnar_floor import empty_db_bytes, sqlite_bytes

DATA = REPO / "tests" / "data"
DEFAULT = [
    REPO / "perf" / "data" / "h200_gpt_12l.pt.trace.json.gz",
    REPO / "perf" / "data" / "h200_gpt_12l.x10.pt.trace.json.gz",
    REPO / "perf" / "data" / "train_step.x110.sqlite",
    DATA / "nsys" / "train_step.sqlite",
    DATA / "ncu" / "gemm_elementwise_raw.csv",
    DATA / "rocprof" / "4242_results.db",
    DATA / "rocprof" / "v3_run.zip",
    DATA / "rocprof" / "v1" / "results.csv",
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path)
    files = [f for f in (ap.parse_args().files or DEFAULT) if f.exists()]
    print(f"{'file':44} {'events':>10} {'dataset B':>11} {'SQL B':>9} {'B/event':>8} {'data':>6}")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        empty = empty_db_bytes(tmp)
        for i, path in enumerate(files):
            run = tmp / f"run{i}"
            db = run / "perfdash.db"
            result = perfdash_ingest(path, f"sqlite:///{db}", run)
            if result["status"] != "ready":
                print(f"{path.name:44} {result['status']}", file=sys.stderr)
                continue
            events = int(result["events"])
            data, grown = dataset_bytes(run / "var"), sqlite_bytes(db) - empty
            print(
                f"{path.name[:44]:44} {events:>10,} {data:>11,} {grown:>9,} "
                f"{(data + grown) / events:8.1f} {data / events:6.1f}"
            )


if __name__ == "__main__":
    main()
