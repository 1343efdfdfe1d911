"""Chrome-trace export time of the real H200 GPT trace (#17: under 2 s, flows included).

Run: `python perf/bench_export.py [--trace PATH] [--scale N] [--runs 3]`. It ingests the
trace (`--scale N`: its events repeated N times, `_bench.scaled_trace`) into a
fresh SQLite database and data dir (the normal ingest service, in this process), then
times `export_chrome_trace` end to end: from the call until the last chunk of the body is
consumed, as the API's streaming response would. The median of `--runs` runs is printed
with the stored event count, events/s, the body size and its flow (`s`/`f`) count, and
the median CPU time of the process (all its threads) per export, which other load on the
machine changes far less than the wall time.

Input: `perf/data/h200_gpt_12l.pt.trace.json.gz` (246k events, 186k of them stored; made
by tests/data/make_transformer_trace.py).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from _bench import TRACE, ingest_here, scaled_trace

BUDGET_S = 2.0


def export_once(trace_id: str) -> tuple[float, float, int, bytes]:
    """One export, timed from the call to the last byte; (seconds, CPU seconds, size, body)."""
    from sqlmodel import Session

    from backend.core.db import get_engine
    from backend.models import Trace
    from backend.services.traces import export_chrome_trace

    with Session(get_engine()) as session:
        trace = session.get(Trace, trace_id)
        assert trace is not None
        session.expunge(trace)
    chunks = []
    t, cpu = time.perf_counter(), time.process_time()
    for chunk in export_chrome_trace(trace):
        chunks.append(chunk)
    elapsed, cpu = time.perf_counter() - t, time.process_time() - cpu
    body = b"".join(chunks)
    return elapsed, cpu, len(body), body


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trace", type=Path, default=TRACE)
    parser.add_argument("--scale", type=int, default=1, help="repeat the default trace")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    trace = scaled_trace(args.scale) if args.scale > 1 else args.trace
    times, cpus, size, body = [], [], 0, b""
    with tempfile.TemporaryDirectory(prefix="bench-export-") as tmp:
        t = time.perf_counter()
        trace_id, _ = ingest_here(trace, f"sqlite:///{Path(tmp) / 'perfdash.db'}", Path(tmp))
        print(f"ingested {trace.name} in {time.perf_counter() - t:.1f} s", flush=True)
        for _ in range(args.runs):
            elapsed, cpu, size, body = export_once(trace_id)
            times.append(elapsed)
            cpus.append(cpu)
    events = json.loads(body)["traceEvents"]
    phases = [e["ph"] for e in events]
    stored = sum(p in ("X", "i") for p in phases)
    median = statistics.median(times)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, load average {load}, {os.cpu_count()} CPUs\n"
        f"export: median {median:.3f} s of {args.runs} runs "
        f"({', '.join(f'{x:.3f}' for x in times)}); budget {BUDGET_S} s\n"
        f"CPU time: median {statistics.median(cpus):.3f} s "
        f"({', '.join(f'{x:.3f}' for x in cpus)})\n"
        f"{stored:,} events ({stored / median:,.0f} events/s), "
        f"{phases.count('s'):,} s + {phases.count('f'):,} f flow events, "
        f"{size / 1e6:.1f} MB",
        flush=True,
    )


if __name__ == "__main__":
    main()
