"""Ingest throughput: parse + kernel stats, and parse + bulk load into a database.

Run: `python perf/bench_ingest.py [--events 500000] [--database-url URL]`.
The anchor in the same run is the standard library's `json.load` of the same file (the
least any Python JSON-trace reader must do); the ratio says how far perfdash is from it.
HTA, the anchor of issue #3, is not installed here; that comparison comes with #3.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from ingest import TraceStats, parse_file


def make_trace(path: Path, n: int) -> None:
    """A Kineto-shaped trace: kernels, runtime calls and CPU ops in a 2:1:1 mix."""
    rng = random.Random(0)
    events = []
    for i in range(n):
        ts = f"{i * 3}.{rng.randrange(1000):03d}"
        dur = f"{rng.randrange(1, 500)}.{rng.randrange(1000):03d}"
        if i % 4 < 2:
            ev = {
                "ph": "X",
                "cat": "kernel",
                "name": f"kernel_{i % 97}",
                "pid": 0,
                "tid": 7,
                "ts": ts,
                "dur": dur,
                "args": {
                    "correlation": i,
                    "stream": 7,
                    "device": 0,
                    "grid": [128, 1, 1],
                    "block": [256, 1, 1],
                    "registers per thread": 64,
                },
            }
        elif i % 4 == 2:
            ev = {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                "pid": 1,
                "tid": 1,
                "ts": ts,
                "dur": dur,
                "args": {"correlation": i, "cbid": 211},
            }
        else:
            ev = {
                "ph": "X",
                "cat": "cpu_op",
                "name": "aten::mm",
                "pid": 1,
                "tid": 1,
                "ts": ts,
                "dur": dur,
                "args": {"External id": i, "Input Dims": [[8, 8]]},
            }
        events.append(ev)
    text = json.dumps({"schemaVersion": 1, "baseTimeNanoseconds": 0, "traceEvents": events})
    # Kineto writes times as bare numbers with 3 decimals.
    text = (
        text.replace('"ts": "', '"ts": ')
        .replace('"dur": "', '"dur": ')
        .replace('", "args"', ', "args"')
    )
    text = text.replace('", "dur"', ', "dur"')
    path.write_bytes(text.encode())


def timed(fn: object) -> float:
    assert callable(fn)
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def bench_parse(path: Path) -> float:
    def run() -> None:
        stats = TraceStats()
        for e in parse_file(path).events:
            stats.add(e)

    return min(timed(run) for _ in range(3))


def bench_stdlib(path: Path) -> float:
    def run() -> None:
        with path.open("rb") as f:
            json.load(f)

    return min(timed(run) for _ in range(3))


def bench_load(path: Path, url: str, tmp: Path) -> float:
    import os

    os.environ["PERFDASH_DATA_DIR"] = str(tmp / "var")
    os.environ["PERFDASH_DATABASE_URL"] = url
    from sqlmodel import Session

    import backend.core.queue as queue
    from backend.core.config import get_settings
    from backend.core.db import get_engine
    from backend.core.migrate import upgrade_database
    from backend.services.trace_ingest import ingest_trace
    from backend.services.traces import accept_upload

    queue.enqueue = lambda *a, **k: None  # measure the load, not the broker
    upgrade_database()
    settings, engine = get_settings(), get_engine()
    with Session(engine) as session, path.open("rb") as f:
        trace, _ = accept_upload(
            session=session, settings=settings, stream=f, name="b", project="p"
        )
    return timed(lambda: ingest_trace(engine=engine, settings=settings, trace_id=trace.id))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=500_000)
    ap.add_argument("--database-url", default="")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        path = tmp / "bench.json"
        make_trace(path, args.events)
        size = path.stat().st_size
        anchor, ours = bench_stdlib(path), bench_parse(path)
        url = args.database_url or f"sqlite:///{tmp / 'bench.db'}"
        load = bench_load(path, url, tmp)
    n = args.events
    print(
        f"# {datetime.now(UTC):%Y-%m-%d} {platform.node()} {platform.machine()}"
        f" python {platform.python_version()}"
    )
    print(f"events: {n}, file: {size / 1e6:.1f} MB")
    print(f"stdlib json.load (anchor):  {anchor:6.2f} s  {n / anchor:>10,.0f} events/s")
    print(
        f"perfdash parse + stats:     {ours:6.2f} s  {n / ours:>10,.0f} events/s"
        f"  ratio vs anchor {anchor / ours:.2f}x"
    )
    print(
        f"perfdash ingest into {url.split(':')[0]:10s} {load:6.2f} s  {n / load:>10,.0f} events/s"
    )


if __name__ == "__main__":
    main()
