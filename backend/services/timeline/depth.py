"""A lane's deepest nesting level, measured while its rows stream into the pyramid.

The client sizes a lane's rows before any window arrives, so the index stores the largest
depth a raw window of the lane can show. It is the same stack rule as the windows'
(`windows._set_depths`): over events sorted by start, longer first at an equal start, an
event sits one deeper than the open events that end after it starts (events that merely
touch, end == start, do not nest). A lane's rows come sorted by (start, end), shorter
first, so the events sharing a start are held and replayed longest first.

Public surface: `MaxDepth`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from backend.services.timeline.stretches import Row


class MaxDepth:
    """Pass a lane's rows through `watch`; once they are consumed, `value` is the lane's
    largest 0-based depth (0 for no rows)."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0

    def watch(self, rows: Iterable[Row]) -> Iterator[Row]:
        """Yield `rows` unchanged (sorted by start, then end) and measure their depth."""
        it = iter(rows)
        first = next(it, None)
        if first is None:
            return
        yield first
        stack: list[int] = []
        deepest = 0
        # The start held, and the end of the one event starting there, or (`more`) the ends
        # of all of them when several do.
        at, end = first[0], first[1]
        more: list[int] | None = None
        for row in it:
            start = row[0]
            if start == at:
                if more is None:
                    more = [end]
                more.append(row[1])
            elif more is None:  # inline: the common case, once per event
                while stack and stack[-1] <= at:
                    stack.pop()
                if len(stack) > deepest:
                    deepest = len(stack)
                stack.append(end)
                at, end = start, row[1]
            else:
                deepest = max(deepest, _place(stack, at, more))
                at, end, more = start, row[1], None
            yield row
        self.value = max(deepest, _place(stack, at, [end] if more is None else more))


def _place(stack: list[int], at: int, ends: list[int]) -> int:
    """Push the events starting at `at` (their `ends`) longest first, as the windows'
    stack does; the deepest depth among them."""
    deepest = 0
    for e in sorted(ends, reverse=True):
        while stack and stack[-1] <= at:
            stack.pop()
        deepest = max(deepest, len(stack))
        stack.append(e)
    return deepest
