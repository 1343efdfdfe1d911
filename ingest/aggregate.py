"""One pass over a trace's events that feeds every ingest-time aggregate.

`perfdash ingest FILE` and the worker both go through `TraceAggregator`, so the CLI and the
stored trace can never disagree. Public surface: `TraceAggregator`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ingest.errors import ParseError
from ingest.events import Event, EventBlock, TraceHeader
from ingest.guard import TIME_LIMIT_NS, EventGuard, check_columns, time_error
from ingest.stats import KernelGroupStat, TraceStats
from ingest.summary import SummaryBuilder


class TraceAggregator:
    """Wrap an event stream with `feed`; read `stats` and `summary(header)` once it is drained.

    Args:
        step_marker: the step marker the user chose for this trace; None finds one.
    """

    def __init__(self, step_marker: str | None = None) -> None:
        self.stats = TraceStats()
        # shares the kernel columns, fed below
        self._summary = SummaryBuilder(self.stats, step_marker=step_marker)
        self.events = 0
        self._guard = EventGuard()

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
        guard = self._guard
        good = guard.good
        n = 0
        try:
            for item in items:
                if isinstance(item, EventBlock):
                    if not good.issuperset(item.name):
                        item.name = guard.names(item.name, n, item.kind)
                    names = item.name
                    check_columns(
                        item.kind, item.start_ns, item.dur_ns, names.__getitem__, "event", n
                    )
                    stats_block(item)
                    summary_block(item)
                    n += len(item)
                else:
                    if item.name not in good:
                        item.name = guard.name(item.name, n, item.kind)
                    add_stats(item)  # checks the times (only when they extend the span)
                    add_summary(item)
                    n += 1
                yield item
            self._summary.flush()
            self.stats.check_kernel_times()
        except OverflowError as e:  # a kernel's column (`array('q')`) refused a value
            raise _overflow_error(item, n, e) from e
        except ParseError as e:
            if e.location is None:  # raised by `TraceStats.add` for event n
                e.location = f"event {n}"
            raise
        finally:
            self.events += n

    def drain(self, events: Iterable[Event | EventBlock]) -> None:
        """Account for every event without keeping them (the CLI's path)."""
        for _ in self.feed(events):
            pass

    def summary(self, header: TraceHeader) -> dict[str, Any]:
        """The stored summary (see `ingest.summary`)."""
        return self._summary.finish(header)

    def kernel_groups(self) -> list[KernelGroupStat]:
        """Kernel stats per stream, device, rank and launching CPU op (after `summary`)."""
        return self._summary.kernel_groups()


def _overflow_error(item: Event | EventBlock, n: int, error: OverflowError) -> ParseError:
    """Say which value of event `n` did not fit 64 bits: its time when that is the one."""
    where = f"event {n}"
    if isinstance(item, Event):
        start, end = item.start_ns, item.start_ns + item.dur_ns
        for value, what in ((start, "starts"), (end, "ends")):
            if not -TIME_LIMIT_NS < value < TIME_LIMIT_NS:
                return time_error(value, what, item.kind, item.name, where)
    return ParseError(f"an event holds an integer beyond 64 bits ({error})", location=where)
