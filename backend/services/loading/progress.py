"""Live ingest progress that pages can read while the ingest transaction is still open.

The events of a trace are written in one transaction (all or nothing), so progress cannot
go through that transaction. On PostgreSQL a second, autocommit connection updates
`traces.progress`. SQLite allows one writer at a time, and the ingest holds it, so there
progress goes to a small JSON file beside the database (SQLite means one host anyway).
Updates are throttled to a few per second.

Public surface: `ProgressReporter`, `read_progress`.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any

from sqlalchemy import update
from sqlalchemy.engine import Engine

from backend.core.config import Settings
from backend.models import Trace

MIN_INTERVAL_S = 0.5


def _file(settings: Settings, trace_id: str) -> Path:
    return settings.data_dir / "progress" / f"{trace_id}.json"


class ProgressReporter:
    """Record `bytes_done` of `bytes_total` and events stored so far for one trace."""

    def __init__(self, engine: Engine, settings: Settings, trace_id: str) -> None:
        self.engine, self.settings, self.trace_id = engine, settings, trace_id
        self.use_file = engine.dialect.name == "sqlite"
        self._last = 0.0

    def update(
        self, *, bytes_done: int, bytes_total: int, events: int, force: bool = False
    ) -> None:
        """Store the figures, at most every `MIN_INTERVAL_S` unless `force`."""
        now = time.monotonic()
        if not force and now - self._last < MIN_INTERVAL_S:
            return
        self._last = now
        doc = {
            "bytes_done": bytes_done,
            "bytes_total": bytes_total,
            "events": events,
            "fraction": round(bytes_done / bytes_total, 4) if bytes_total else None,
        }
        if self.use_file:
            path = _file(self.settings, self.trace_id)
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(doc))
            tmp.replace(path)
            return
        with self.engine.connect() as conn:
            conn.execute(
                update(Trace).where(Trace.id == self.trace_id).values(progress=doc)  # type: ignore[arg-type]
            )
            conn.commit()

    def clear(self) -> None:
        """Forget the progress (the trace is ready or failed)."""
        if self.use_file:
            with contextlib.suppress(FileNotFoundError):
                _file(self.settings, self.trace_id).unlink()


def read_progress(engine: Engine, settings: Settings, trace: Trace) -> dict[str, Any] | None:
    """The latest progress of a trace being processed, wherever it was recorded."""
    if engine.dialect.name != "sqlite":
        return trace.progress
    try:
        doc: dict[str, Any] = json.loads(_file(settings, trace.id).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return doc
