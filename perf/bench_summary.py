"""Cost of the trace summary per event: `SummaryBuilder.add` and `finish`, in isolation.

Run: `python perf/bench_summary.py [--events 300000]`. Two inputs, parsed once into memory
so that only the summary is timed (CPU time, best of 5: the dev VM's 2 cores are shared):
- a synthetic Kineto trace of `--events` events: per launch a cpu_op, its runtime call and
  its kernel (correlated), so every join in `finish` has work to do;
- the real H200 GPT trace in `perf/data/` (cpu ops, memory events, kernels, steps).
The anchor in the same run is counting events by kind in a `Counter` (the least any
per-event aggregate does).
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ingest import Event, parse_file
from ingest.summary import SummaryBuilder

REAL = Path(__file__).resolve().parent / "data" / "h200_gpt_12l.pt.trace.json.gz"


def make_trace(path: Path, n: int) -> None:
    """`n` events: launches of (cpu_op > runtime call) on the CPU and a kernel on the GPU."""
    events: list[dict[str, Any]] = []
    for i in range(n // 3):
        t = i * 10_000
        names = ("aten::mm", "cudaLaunchKernel", f"kernel_{i % 97}")
        common = {"ph": "X", "pid": 1, "tid": 1}
        events.append({**common, "cat": "cpu_op", "name": names[0], "ts": t / 1000, "dur": 5.0,
                       "args": {"External id": i}})  # fmt: skip
        events.append({**common, "cat": "cuda_runtime", "name": names[1], "ts": t / 1000 + 1,
                       "dur": 2.0, "args": {"correlation": i}})  # fmt: skip
        events.append({"ph": "X", "cat": "kernel", "name": names[2], "pid": 0, "tid": 7 + i % 2,
                       "ts": t / 1000 + 4, "dur": 3.0 + i % 5,
                       "args": {"correlation": i, "stream": 7 + i % 2, "device": 0,
                                "grid": [128, 1, 1], "block": [256, 1, 1]}})  # fmt: skip
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))


def _best(fn: Callable[[], object], repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def bench(path: Path) -> tuple[int, float, float, float]:
    """Events, then seconds for: the Counter anchor, `add` on every event, `finish`."""
    parsed = parse_file(path)
    events: list[Event] = list(parsed.events)

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
    finish_s = _best(lambda: (builders[-1].finish(parsed.header), builders[-1].kernel_groups()), 1)
    return len(events), _best(anchor), add_s, finish_s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=300_000)
    args = ap.parse_args()
    print(
        f"# {datetime.now(UTC):%Y-%m-%d} {platform.node()} {platform.machine()}"
        f" python {platform.python_version()}"
    )
    print(f"{'input':28} {'events':>8} {'anchor ns/ev':>13} {'add ns/ev':>10} {'finish ns/ev':>13}")
    with tempfile.TemporaryDirectory() as d:
        synthetic = Path(d) / "synthetic.json"
        make_trace(synthetic, args.events)
        inputs = [("synthetic (launch triples)", synthetic)]
        if REAL.exists():
            inputs.append(("H200 GPT, 12 layers (real)", REAL))
        for label, path in inputs:
            n, anchor, add, finish = bench(path)
            print(
                f"{label:28} {n:8d} {1e9 * anchor / n:13.0f} {1e9 * add / n:10.0f}"
                f" {1e9 * finish / n:13.0f}"
            )


if __name__ == "__main__":
    main()
