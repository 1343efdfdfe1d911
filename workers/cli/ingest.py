"""`perfdash ingest FILE`: parse a trace locally, with no server, and print what the
stored trace would answer (kernel top-N, counts, the summary), with a progress bar on a
terminal. It goes through `ingest.aggregate.TraceAggregator`, the same pass the worker uses.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from ingest import Event, ParseReport, TraceStats

BAR_WIDTH = 30
REDRAW_S = 0.2


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `ingest` subcommand."""
    ingest = sub.add_parser("ingest", help="parse a trace locally, with no server")
    ingest.add_argument("file", type=Path)
    ingest.add_argument("--json", action="store_true", help="print everything as JSON")
    ingest.add_argument("--top", type=int, default=None, help="only the N largest kernels")
    ingest.add_argument(
        "--no-progress", action="store_true", help="no progress bar, even on a terminal"
    )
    ingest.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Parse `args.file`; exit 2 with the parser's message on bad input."""
    from backend.core.allocator import pin_mmap_threshold
    from ingest import IngestError, parse_file
    from ingest.aggregate import TraceAggregator

    pin_mmap_threshold()
    show_bar = sys.stderr.isatty() and not args.no_progress
    try:
        parsed = parse_file(args.file)
        aggregator = TraceAggregator()
        events = parsed.events
        if show_bar:
            events = _with_bar(events, parsed.report, sys.stderr)
        aggregator.drain(events)
        summary = aggregator.summary(parsed.header)
    except (IngestError, OSError) as e:
        if show_bar:
            sys.stderr.write("\n")
        print(f"perfdash: cannot ingest {args.file}: {e}", file=sys.stderr)
        return 2
    stats = aggregator.stats
    doc: dict[str, Any] = {
        "file": str(args.file),
        "format": parsed.header.format.value,
        "events": dict(stats.counts),
        "duration_ns": stats.duration_ns,
        "rank": parsed.header.rank,
        "world_size": parsed.header.world_size,
        "devices": [
            {"index": d.index, "name": d.name, **d.properties} for d in parsed.header.devices
        ],
        "metadata": parsed.header.metadata,
        "skipped_events": parsed.report.skipped,
        "warnings": parsed.report.warnings,
        "kernels": [k.as_dict() for k in stats.kernels(args.top)],
        "kernel_groups": [g.as_dict() for g in aggregator.kernel_groups()],
        "summary": summary,
    }
    if args.json:
        print(json.dumps(doc, indent=2, default=str))
    else:
        _print_table(str(args.file), parsed.header.format.value, stats, args.top)
    return 0


def _with_bar(events: Iterator[Event], report: ParseReport, out: TextIO) -> Iterator[Event]:
    """Pass events through, redrawing a one-line bar (bytes read of total) a few times a second."""
    start = last = time.monotonic()
    for n, event in enumerate(events, 1):
        if not n & 2047:
            now = time.monotonic()
            if now - last >= REDRAW_S:
                last = now
                _draw(out, report.bytes_done, report.bytes_total, n, now - start)
        yield event
    _draw(out, report.bytes_total, report.bytes_total, 0, time.monotonic() - start)
    out.write("\n")


def _draw(out: TextIO, done: int, total: int, events: int, elapsed: float) -> None:
    frac = min(1.0, done / total) if total else 0.0
    filled = int(frac * BAR_WIDTH)
    bar = "#" * filled + "." * (BAR_WIDTH - filled)
    count = f"  {events:,} events" if events else ""
    out.write(
        f"\r[{bar}] {frac:6.1%}  {done / 1e6:,.1f}/{total / 1e6:,.1f} MB{count}  {elapsed:.1f} s"
    )
    out.flush()


def _print_table(file: str, fmt: str, stats: TraceStats, top: int | None) -> None:
    print(f"{file}: {fmt}, events {dict(stats.counts)}")
    print(f"{'total ms':>10} {'count':>7} {'mean us':>9}  name")
    for k in stats.kernels(top):
        print(f"{k.total_ns / 1e6:10.3f} {k.count:7d} {k.mean_ns / 1e3:9.2f}  {k.name[:100]}")
