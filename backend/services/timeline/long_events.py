"""A dataset's long events (longer than `pyramid.LONG_NS`) in memory, for raw windows.

A raw window finds its short events by a (kind, start_ns) range with a `LONG_NS`
look-back; a long event that starts before that look-back but still overlaps the window
must be found another way. They are few (3,264 of an 8-rank job's 6M events: step
annotations, module ranges, a few waits), so they are read once per dataset, one full
scan of the `dur_ns` column, and kept beside the pyramid: a window then picks them with a
numpy mask instead of a query on `timeline_spans` and a second Parquet scan by id.

Public surface: `LongEvents`, `long_events`, `RAW_COLUMNS`.
"""

from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from backend.models.traces import Trace
from backend.services.datasets import events_file, query_file
from backend.services.timeline.pyramid import LONG_NS

# The columns a raw window reads of each event, in `windows._raw_item`'s order.
RAW_COLUMNS = "id, kind, name, start_ns, dur_ns, rank, device, stream, pid, tid, args"


class LongEvents:
    """The long events of one dataset as rows (`RAW_COLUMNS`), with arrays to pick them."""

    def __init__(self, rows: Sequence[tuple[Any, ...]]) -> None:
        self.rows = list(rows)
        self.kind = np.array([row[1] for row in self.rows], dtype=object)
        self.start = np.array([row[3] for row in self.rows], dtype=np.int64)
        self.end = self.start + np.array([row[4] for row in self.rows], dtype=np.int64)

    def overlapping(self, ws: int, we: int, kinds: Sequence[str]) -> list[tuple[Any, ...]]:
        """The rows of the given kinds overlapping [ws, we) (`end >= ws`, as windows
        count an event that ends at the window's start)."""
        hit = (self.start < we) & (self.end >= ws) & np.isin(self.kind, list(kinds))
        return [self.rows[i] for i in np.flatnonzero(hit).tolist()]


def long_events(trace: Trace) -> LongEvents:
    """The trace's long events, read on first use per dataset.

    Raises:
        NotFoundError: the trace has no dataset (`datasets.events_file`).
    """
    return _long(str(events_file(trace)))


@lru_cache(maxsize=4)  # as many datasets as the pyramid cache keeps
def _long(events: str) -> LongEvents:
    sql = f"SELECT {RAW_COLUMNS} FROM {{events}} WHERE dur_ns > ? ORDER BY start_ns, id"
    return LongEvents(query_file(Path(events), sql, [LONG_NS]))
