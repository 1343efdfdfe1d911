"""One pass over a trace's events that feeds every ingest-time aggregate.

`perfdash ingest FILE` and the worker both go through `TraceAnalysis`, so the CLI and the
stored trace can never disagree. Public surface: `TraceAnalysis`.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator
from typing import Any

from ingest.errors import ParseError
from ingest.events import Event, EventBlock, EventKind, TraceMeta
from ingest.guard import EventGuard, check_time
from ingest.stats import KernelGroupStat, TraceStats
from ingest.summary import SummaryBuilder


class TraceAnalysis:
    """Wrap an event stream with `feed`; read `stats` and `summary(meta)` once it is drained."""

    def __init__(self) -> None:
        self.stats = TraceStats()
        self._summary = SummaryBuilder(self.stats)  # shares the kernel columns, fed below
        self.events = 0
        self._guard = EventGuard()
        self._span = [0, 0]  # times inside it have passed `check_time`

    def feed(self, items: Iterable[Event | EventBlock]) -> Iterator[Event | EventBlock]:
        """Yield every event (or parser's `EventBlock`) after accounting for it; a block is
        accounted for column by column, as its rows one by one would be.

        Every event first passes `ingest.guard`: names made storable, times in range.

        Raises:
            ParseError: an event breaks a bound of `ingest.guard`, or holds an integer
                beyond 64 bits; the message names the event.
        """
        add_stats, add_summary = self.stats.add, self._summary.add
        stats_block, summary_block = self.stats.add_block, self._summary.add_block
        guard, span = self._guard, self._span
        good = guard.good
        n = 0
        try:
            for item in items:
                if isinstance(item, EventBlock):
                    self._check_block(item, n)
                    stats_block(item)
                    summary_block(item)
                    n += len(item)
                else:
                    if item.name not in good:
                        item.name = guard.name(item.name, n, item.kind)
                    start = item.start_ns
                    end = start + item.dur_ns
                    if start < span[0] or end > span[1] or end < span[0]:
                        self._extend(n, item.kind, item.name, start, end)
                    add_stats(item)
                    add_summary(item)
                    n += 1
                yield item
        except OverflowError as e:  # a device, stream or correlation id past int64
            raise ParseError(
                f"an event holds an integer beyond 64 bits ({e})", location=f"event {n}"
            ) from e
        finally:
            self.events += n

    def _check_block(self, block: EventBlock, first: int) -> None:
        if not self._guard.good.issuperset(block.name):
            block.name = self._guard.names(block.name, first, block.kind)
        if not len(block):
            return
        ends = list(map(operator.add, block.start_ns, block.dur_ns))
        for values in (block.start_ns, ends):
            lo, hi = min(values), max(values)
            if lo < self._span[0] or hi > self._span[1]:
                i = values.index(lo if lo < self._span[0] else hi)
                self._extend(first + i, block.kind, block.name[i], block.start_ns[i], ends[i])

    def _extend(self, index: int, kind: EventKind, name: str, start: int, end: int) -> None:
        """Widen the span seen so far to an event's, checking its times against the limit."""
        check_time(start, "starts", index, kind, name)
        check_time(end, "ends", index, kind, name)
        self._span[0] = min(self._span[0], start, end)
        self._span[1] = max(self._span[1], end)

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
