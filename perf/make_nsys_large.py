"""Build a large nsys-shaped sqlite export from a real one by replicating its activity rows.

Run: `python perf/make_nsys_large.py [--factor 110] [--source tests/data/nsys/train_step.sqlite]`.
Writes `perf/data/<source stem>.x<factor>.sqlite` (git ignores it). Every activity table
(kernels, copies, memsets, syncs, runtime/driver calls, NVTX, graph nodes) gets `factor - 1`
extra copies of its rows, each shifted by the source's time span, with correlation ids shifted
too so launches still pair with their kernels. Strings, devices and metadata are shared, as in
a long real capture. The real train-step fixture has 9,870 events; x110 gives about 1.09 M.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "tests" / "data" / "nsys" / "train_step.sqlite"
TABLES = (
    "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS",
    "CUDA_GRAPH_NODE_EVENTS",
)  # fmt: skip


def build(factor: int, source: Path = SOURCE) -> Path:
    """Return the path of the replicated export, building it once."""
    out = REPO / "perf" / "data" / f"{source.stem}.x{factor}.sqlite"
    if out.exists():
        return out
    tmp = out.with_suffix(".tmp")
    shutil.copyfile(source, tmp)
    conn = sqlite3.connect(tmp, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = OFF")
        conn.execute("PRAGMA synchronous = OFF")
        present = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        tables = [t for t in TABLES if t in present]
        span = _span(conn, tables)
        corr_span = 1 + max(
            conn.execute(f"SELECT coalesce(max(correlationId), 0) FROM {t}").fetchone()[0]
            for t in tables
            if "correlationId" in _columns(conn, t)
        )
        conn.execute("BEGIN")
        for table in tables:
            _replicate(conn, table, factor, span, corr_span)
        conn.execute("COMMIT")
    finally:
        conn.close()
    tmp.rename(out)
    return out


def _span(conn: sqlite3.Connection, tables: list[str]) -> int:
    lo, hi = None, None
    for t in tables:
        a, b = conn.execute(f"SELECT min(start), max(coalesce(end, start)) FROM {t}").fetchone()
        if a is not None:
            lo, hi = min(a, lo if lo is not None else a), max(b, hi if hi is not None else b)
    return (hi or 0) - (lo or 0) + 1_000


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]


def _replicate(
    conn: sqlite3.Connection, table: str, factor: int, span: int, corr_span: int
) -> None:
    cols = _columns(conn, table)
    shifted = {
        "start": "start + {t}",
        "end": "end + {t}",
        "correlationId": "correlationId + {c}",
    }
    original = conn.execute(f"SELECT max(rowid) FROM {table}").fetchone()[0] or 0
    for i in range(1, factor):
        select = ", ".join(
            shifted.get(c, c).format(t=i * span, c=i * corr_span) if c in shifted else c
            for c in cols
        )
        conn.execute(
            f"INSERT INTO {table} ({', '.join(cols)}) "
            f"SELECT {select} FROM {table} WHERE rowid <= {original}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--factor", type=int, default=110)
    ap.add_argument("--source", type=Path, default=SOURCE)
    args = ap.parse_args()
    out = build(args.factor, args.source)
    print(f"{out} ({out.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
