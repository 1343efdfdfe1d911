"""One pass over a trace's events that feeds every ingest-time aggregate.

`perfdash ingest FILE` and the worker both go through `TraceAnalysis`, so the CLI and the
stored trace can never disagree. Public surface: `TraceAnalysis`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ingest.events import Event, TraceMeta
from ingest.stats import KernelGroupStat, TraceStats
from ingest.summary import SummaryBuilder


class TraceAnalysis:
    """Wrap an event stream with `feed`; read `stats` and `summary(meta)` once it is drained."""

    def __init__(self) -> None:
        self.stats = TraceStats()
        self._summary = SummaryBuilder(self.stats)  # shares the kernel columns, fed below
        self.events = 0

    def feed(self, events: Iterable[Event]) -> Iterator[Event]:
        """Yield every event unchanged after accounting for it."""
        add_stats, add_summary = self.stats.add, self._summary.add
        n = 0
        try:
            for event in events:
                add_stats(event)
                add_summary(event)
                n += 1
                yield event
        finally:
            self.events += n

    def drain(self, events: Iterable[Event]) -> None:
        """Account for every event without keeping them (the CLI's path)."""
        for _ in self.feed(events):
            pass

    def summary(self, meta: TraceMeta) -> dict[str, Any]:
        """The stored summary (see `ingest.summary`)."""
        return self._summary.finish(meta)

    def kernel_groups(self) -> list[KernelGroupStat]:
        """Kernel stats per stream, device, rank and launching CPU op (after `summary`)."""
        return self._summary.kernel_groups()
