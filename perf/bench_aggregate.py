"""Time `TraceAggregator` alone (drain, summary, kernels, kernel groups) on one trace, its
events fed one at a time or regrouped into per-kind `EventBlock`s, median of runs (wall and
process CPU time: the machine may be shared).

Run from the repository root (PYTHONPATH at the tree to measure):
    python perf/bench_aggregate.py [--blocks 32768] [--runs 3] [FILE]

The file is parsed once, outside the timing; `--blocks N` feeds the events regrouped per
kind into blocks of up to N rows (the shape of a columnar parser's output), else as events.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

from ingest import parse_file
from ingest._columns import regroup
from ingest.aggregate import TraceAggregator

DEFAULT = Path(__file__).resolve().parent / "data" / "h200_gpt_12l.pt.trace.json.gz"


def run_once(path: Path, items: list[Any]) -> tuple[float, float]:
    header = parse_file(path).header
    t0, c0 = time.perf_counter(), time.process_time()
    agg = TraceAggregator()
    agg.drain(iter(items))
    agg.summary(header)
    agg.stats.kernels()
    agg.kernel_groups()
    return time.perf_counter() - t0, time.process_time() - c0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("file", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--blocks", type=int, default=0)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    events = list(parse_file(args.file).events)
    items: list[Any] = regroup(events, args.blocks) if args.blocks else events
    runs = [run_once(args.file, items) for _ in range(args.runs)]
    wall, cpu = ([r[i] for r in runs] for i in (0, 1))
    print(
        f"{args.file.name}: {len(events)} events, "
        f"{'blocks of ' + str(args.blocks) if args.blocks else 'events'}: "
        f"median {statistics.median(wall):.3f} s wall {[round(t, 3) for t in wall]}, "
        f"{statistics.median(cpu):.3f} s CPU {[round(t, 3) for t in cpu]}"
    )


if __name__ == "__main__":
    main()
