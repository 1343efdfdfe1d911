"""One GPU event per encoder run: Metal writes nested rows for one encoder.

`metal-gpu-intervals` can hold several rows for one (command buffer, encoder) on a channel,
nested (a later start, the same end) or touching; the encoder's GPU time is their union,
never their sum, or the kernel totals count it twice. Rows of one encoder that overlap are
merged into one event (`args.rows` says how many); rows without an encoder id are kept.
"""

from __future__ import annotations

import heapq

from ingest.events import Event

Key = tuple[str, str, str, str]  # command buffer, encoder, channel, process


def merge_key(event: Event) -> Key | None:
    """What identifies one encoder's rows, or None when the row names no encoder."""
    args = event.args or {}
    if args.get("encoder") is None:
        return None
    return args["command_buffer"], args["encoder"], args["channel"], args.get("process", "")


class EncoderSpans:
    """Open encoder spans; a span is complete once a later row starts after its end (the
    table is in start order), or at `flush`.

    The open spans' ends are kept in a heap, so a row costs O(log n) however many spans are
    open (a scan of every open span made 40k rows that never close take 33 s). A span that
    grows pushes its new end; the old entry is stale and skipped when it surfaces.
    """

    def __init__(self) -> None:
        self.open: dict[Key, Event] = {}
        self._ends: list[tuple[int, int, Key]] = []  # (end, version, key)
        self._version: dict[Key, int] = {}
        self._pushed = 0

    def add(self, event: Event) -> list[Event]:
        """Take one GPU event; return the events now complete, in no particular order."""
        done = self._ended_before(event.start_ns)
        key = merge_key(event)
        if key is None:
            done.append(event)
            return done
        current = self.open.get(key)
        end = event.start_ns + event.dur_ns
        if current is not None and event.start_ns <= current.start_ns + current.dur_ns:
            start = min(current.start_ns, event.start_ns)
            current.dur_ns = max(current.start_ns + current.dur_ns, end) - start
            current.start_ns = start
            assert current.args is not None
            current.args["rows"] += 1
            self._push(key, current)
            return done
        if current is not None:
            done.append(current)
        assert event.args is not None
        event.args["rows"] = 1
        self.open[key] = event
        self._push(key, event)
        return done

    def flush(self) -> list[Event]:
        """Every open span, as complete events."""
        done, self.open = list(self.open.values()), {}
        self._ends, self._version = [], {}
        return done

    def _push(self, key: Key, span: Event) -> None:
        self._pushed += 1
        self._version[key] = self._pushed
        heapq.heappush(self._ends, (span.start_ns + span.dur_ns, self._pushed, key))

    def _ended_before(self, start_ns: int) -> list[Event]:
        """Remove and return the open spans that end before `start_ns`."""
        done = []
        while self._ends and self._ends[0][0] < start_ns:
            _, version, key = heapq.heappop(self._ends)
            if self._version.get(key) == version:
                del self._version[key]
                done.append(self.open.pop(key))
        return done
