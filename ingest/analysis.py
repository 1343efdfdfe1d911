"""One pass over a trace's events that feeds every ingest-time aggregate.

`perfdash ingest FILE` and the worker both go through `TraceAnalysis`, so the CLI and the
stored trace can never disagree. Public surface: `TraceAnalysis`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ingest.events import Event, EventBlock, TraceMeta
from ingest.stats import KernelGroupStat, TraceStats
from ingest.summary import SummaryBuilder


class TraceAnalysis:
    """Wrap an event stream with `feed`; read `stats` and `summary(meta)` once it is drained.

    Args:
        step_marker: the step marker the user chose for this trace; None finds one.
    """

    def __init__(self, step_marker: str | None = None) -> None:
        self.stats = TraceStats()
        # shares the kernel columns, fed below
        self._summary = SummaryBuilder(self.stats, step_marker=step_marker)
        self.events = 0

    def feed(self, items: Iterable[Event | EventBlock]) -> Iterator[Event | EventBlock]:
        """Yield every event (or parser's `EventBlock`) unchanged after accounting for it;
        a block is accounted for column by column, as its rows one by one would be."""
        add_stats, add_summary = self.stats.add, self._summary.add
        stats_block, summary_block = self.stats.add_block, self._summary.add_block
        n = 0
        try:
            for item in items:
                if isinstance(item, EventBlock):
                    stats_block(item)
                    summary_block(item)
                    n += len(item)
                else:
                    add_stats(item)
                    add_summary(item)
                    n += 1
                yield item
        finally:
            self.events += n

    def drain(self, events: Iterable[Event | EventBlock]) -> None:
        """Account for every event without keeping them (the CLI's path)."""
        for _ in self.feed(events):
            pass

    def summary(self, meta: TraceMeta) -> dict[str, Any]:
        """The stored summary (see `ingest.summary`)."""
        return self._summary.finish(meta)

    def kernel_groups(self) -> list[KernelGroupStat]:
        """Kernel stats per stream, device, rank and launching CPU op (after `summary`)."""
        return self._summary.kernel_groups()
