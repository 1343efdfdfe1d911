"""Cost of the trace summary per event: `SummaryBuilder.add` and `finish`, in isolation.

Run: `python perf/bench_summary.py [--events 300000]`. The events come from the same
synthetic Kineto trace as `bench_ingest.py` (half kernels, a quarter runtime calls, a
quarter CPU ops), parsed once into memory so only the summary is timed. The anchor in the
same run is the old `TraceStats.add` (counts and per-kernel aggregates) replaced by the
builder, measured as the bare loop plus `Counter` counting that it used to do.
"""

from __future__ import annotations

import argparse
import platform
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from bench_ingest import make_trace

from ingest import Event, TraceMeta, parse_file
from ingest.summary import SummaryBuilder


def _best(fn: object, repeat: int = 5) -> float:
    assert callable(fn)
    times = []
    for _ in range(repeat):
        start = time.process_time()  # CPU time: the dev VM's 2 cores are shared
        fn()
        times.append(time.process_time() - start)
    return min(times)


def bench(events: list[Event], meta: TraceMeta) -> tuple[float, float, float]:
    """Seconds for: counting kinds (anchor), `add` on every event, `finish`."""

    def anchor() -> None:
        counts: Counter[str] = Counter()
        for e in events:
            counts[e.kind.value] += 1

    builders: list[SummaryBuilder] = []

    def add() -> None:
        builder = SummaryBuilder()
        for e in events:
            builder.add(e)
        builders.append(builder)

    add_s = _best(add)
    finish_s = _best(lambda: builders[-1].finish(meta), repeat=1)
    return _best(anchor), add_s, finish_s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=300_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "bench.json"
        make_trace(path, args.events)
        parsed = parse_file(path)
        events = list(parsed.events)
    anchor, add, finish = bench(events, parsed.meta)
    n = len(events)
    print(
        f"# {datetime.now(UTC):%Y-%m-%d} {platform.node()} {platform.machine()}"
        f" python {platform.python_version()}"
    )
    print(f"events: {n}")
    print(f"anchor: Counter by kind        {anchor:6.3f} s  {1e9 * anchor / n:7.0f} ns/event")
    print(f"SummaryBuilder.add (all)      {add:6.3f} s  {1e9 * add / n:7.0f} ns/event")
    print(f"SummaryBuilder.finish         {finish:6.3f} s  {1e9 * finish / n:7.0f} ns/event")


if __name__ == "__main__":
    main()
