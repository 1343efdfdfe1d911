"""Kineto events gathered as columns per kind, handed out as `EventBlock`s (issue #17).

Why: one `Event` per event costs a Python `__init__` call and an object that every consumer
then takes apart again; appending each field to its kind's column list is cheaper to make
and lets the aggregator and the writer read columns. No tuple per row either: a retained
tuple is one more object for the garbage collector to walk while the block fills.

Order: within a kind, rows keep the file's order (kernel launch order and the memory
track depend on it). Across kinds they do not: when any kind holds `BLOCK_ROWS` rows,
every kind's rows go out, one block per kind, so kinds stay interleaved within about a
block of each other and memory stays bounded.

Public surface: `KindColumns`, `Appends`, `BLOCK_ROWS`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ingest.events import EventBlock, EventKind

BLOCK_ROWS = 4096
Append = Callable[[Any], None]
# Per kind, the appends of its columns: name, start_ns, dur_ns, (device, stream) or
# (pid, tid) as the kind says (`DEVICE_KINDS` in the parser), correlation, args.
Appends = dict[EventKind, tuple[Append, Append, Append, Append, Append, Append, Append]]


class KindColumns:
    """Per-kind column lists; `appends[kind]` fills them, `flush()` empties them all.

    Args:
        device_kinds: kinds whose third and fourth columns are (device, stream); the
            others' are (pid, tid).
    """

    def __init__(self, device_kinds: frozenset[EventKind]) -> None:
        self._device_kinds = device_kinds
        self._columns: dict[EventKind, tuple[list[Any], ...]] = {
            kind: tuple([] for _ in range(7)) for kind in EventKind
        }
        self.appends: Appends = {
            kind: tuple(c.append for c in columns)  # type: ignore[misc]
            for kind, columns in self._columns.items()
        }

    def full(self) -> bool:
        """Whether some kind holds a block's worth of rows."""
        return max(len(columns[1]) for columns in self._columns.values()) >= BLOCK_ROWS

    def flush(self) -> Iterator[EventBlock]:
        """One block per kind that holds rows (in `EventKind` order), and empty them."""
        for kind, columns in self._columns.items():
            if columns[1]:
                yield self._block(kind, *(c.copy() for c in columns))
                for c in columns:
                    c.clear()

    def _block(
        self,
        kind: EventKind,
        names: list[str],
        starts: list[int],
        durs: list[int],
        a: list[int | None],
        b: list[int | None],
        corrs: list[int | None],
        args: list[dict[str, Any] | None],
    ) -> EventBlock:
        correlation = None if corrs.count(None) == len(corrs) else corrs
        kept = None if args.count(None) == len(args) else args
        if kind in self._device_kinds:
            return EventBlock(
                kind, names, starts, durs, device=a, stream=b, correlation=correlation, args=kept
            )
        return EventBlock(
            kind, names, starts, durs, pid=a, tid=b, correlation=correlation, args=kept
        )
