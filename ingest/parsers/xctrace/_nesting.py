"""One GPU event per encoder run: Metal writes nested rows for one encoder.

`metal-gpu-intervals` can hold several rows for one (command buffer, encoder) on a channel,
nested (a later start, the same end) or touching; the encoder's GPU time is their union,
never their sum, or the kernel totals count it twice. Rows of one encoder that overlap are
merged into one event (`args.rows` says how many); rows without an encoder id are kept.
"""

from __future__ import annotations

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
    table is in start order), or at `flush`."""

    def __init__(self) -> None:
        self.open: dict[Key, Event] = {}

    def add(self, event: Event) -> list[Event]:
        """Take one GPU event; return the events now complete, in no particular order."""
        key = merge_key(event)
        done = [e for e in self.open.values() if e.start_ns + e.dur_ns < event.start_ns]
        for e in done:
            del self.open[merge_key(e)]  # type: ignore[arg-type]
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
            return done
        if current is not None:
            done.append(current)
        assert event.args is not None
        event.args["rows"] = 1
        self.open[key] = event
        return done

    def flush(self) -> list[Event]:
        """Every open span, as complete events."""
        done, self.open = list(self.open.values()), {}
        return done
