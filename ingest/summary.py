"""Trace-level summaries computed once while events stream past (owner: trace views, #6).

`SummaryBuilder.add(event)` is called for every event, in file order, and `finish(meta)`
returns a JSON-ready dict stored in `traces.summary` and printed by `perfdash ingest --json`.
"""

from __future__ import annotations

from typing import Any

from ingest.events import Event, TraceMeta


class SummaryBuilder:
    """Feed events with `add`; `finish` returns the summary dict."""

    def __init__(self) -> None:
        self.events = 0

    def add(self, event: Event) -> None:
        """Account for one event."""
        self.events += 1

    def finish(self, meta: TraceMeta) -> dict[str, Any]:
        """The JSON-ready summary of everything added."""
        return {"events": self.events}
