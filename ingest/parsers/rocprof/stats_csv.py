"""rocprof's own summary tables (``results.stats.csv``, rocprofv3 ``*_stats.csv``).

They hold no per-dispatch timing, so they produce no events: alone, the table is kept in the
trace metadata (top rows) with a warning; beside the dispatch file, perfdash checks its own
kernel totals against it and warns on any difference.
"""

from __future__ import annotations

from collections.abc import Iterable

from ingest.events import Event, EventBlock, EventKind, ParseReport
from ingest.parsers.rocprof._common import warn
from ingest.parsers.rocprof._csv import CsvTable

KEPT_ROWS = 50
StatRow = tuple[str, int, int]


def read_stats(table: CsvTable) -> list[StatRow]:
    """``(name, calls, total_ns)`` per row, largest total first.

    Raises:
        ParseError: a bad cell, or a row with more fields than the header (a kernel name
            with unquoted commas, as some rocprof versions write them); file and line named.
    """
    table.require(("Name", "Calls", "TotalDurationNs"), "rocprof stats")
    rows = [
        (r.text("Name"), r.req_int("Calls"), r.req_int("TotalDurationNs"))
        for r in table.rows(exact_width=True)
    ]
    return sorted(rows, key=lambda r: (-r[2], r[0]))


def as_metadata(rows: list[StatRow]) -> list[dict[str, object]]:
    """The first rows as JSON-ready dicts for `TraceHeader.metadata`."""
    return [{"name": n, "calls": c, "total_ns": t} for n, c, t in rows[:KEPT_ROWS]]


class StatsCheck:
    """Sums kernel events as they pass and compares them with rocprof's stats at the end."""

    def __init__(self, rows: list[StatRow], source: str) -> None:
        self.expected = {name: (calls, total) for name, calls, total in rows}
        self.source = source
        self.seen: dict[str, list[int]] = {}

    def watch(self, events: Iterable[Event | EventBlock]) -> Iterable[Event | EventBlock]:
        """Pass events through, summing kernels by name."""
        for event in events:
            if isinstance(event, EventBlock):
                if event.kind is EventKind.KERNEL:
                    for name, dur in zip(event.name, event.dur_ns, strict=True):
                        agg = self.seen.setdefault(name, [0, 0])
                        agg[0] += 1
                        agg[1] += dur
            elif event.kind is EventKind.KERNEL:
                agg = self.seen.setdefault(event.name, [0, 0])
                agg[0] += 1
                agg[1] += event.dur_ns
            yield event

    def finish(self, report: ParseReport) -> None:
        """Warn about the first kernel whose calls or total differ from the stats file."""
        for name, (calls, total) in self.expected.items():
            got = self.seen.get(name, [0, 0])
            if got != [calls, total]:
                warn(
                    report,
                    f"{self.source}: rocprof's stats say {name[:60]!r} ran {calls}x for "
                    f"{total} ns, the dispatches add up to {got[0]}x {got[1]} ns",
                )
                return
