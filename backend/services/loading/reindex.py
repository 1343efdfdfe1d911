"""Re-ingesting stored traces from their kept blobs, in-process and one at a time.

Traces ingested before the columnar store (issue 17) have no dataset, and traces read by
an older parser lack what it adds; both are loaded again from the upload the blob store
kept, through the same `ingest_trace` a worker runs (so a trace a worker holds is left to
it). `perfdash db reindex` runs this, and `perfdash db upgrade` before the migration that
drops the old `events` table.

Public surface: `ReindexTarget`, `Reindexed`, `traces_to_reindex`, `reindex_trace`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from sqlalchemy import or_
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from backend.core.config import Settings
from backend.models import Trace, TraceStatus
from backend.services.loading.pipeline import ingest_trace
from ingest import PARSER_VERSION

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ReindexTarget:
    """A trace to re-ingest."""

    id: str
    name: str


@dataclass(frozen=True, slots=True)
class Reindexed:
    """How one re-ingest ended.

    `status` is None when the trace was deleted meanwhile or a worker is ingesting it; then
    nothing was done here.
    """

    status: TraceStatus | None
    events: int = 0
    error: str | None = None


def traces_to_reindex(engine: Engine, *, every: bool = False) -> list[ReindexTarget]:
    """The `ready` traces with no dataset or one from another parser version (with
    `every`, all `ready` traces), oldest first."""
    query = select(Trace.id, Trace.name).where(col(Trace.status) == TraceStatus.READY)
    if not every:
        query = query.where(
            or_(
                col(Trace.dataset).is_(None),
                col(Trace.parser_version).is_(None),
                col(Trace.parser_version) != PARSER_VERSION,
            )
        )
    with Session(engine) as session:
        rows = session.exec(query.order_by(col(Trace.created_at), col(Trace.id))).all()
    return [ReindexTarget(trace_id, name) for trace_id, name in rows]


def reindex_trace(
    engine: Engine, settings: Settings, trace_id: str, *, force: bool = False
) -> Reindexed:
    """Re-ingest one trace from its kept blob; never raises for a bad trace.

    A trace whose blob is gone, or whose file the parser now refuses, ends `failed` with
    the reason (as an ingest would), so the caller can go on with the next one.

    Args:
        force: re-ingest even a trace whose dataset is current (`perfdash db reindex --all`).
    """
    fallback: str | None = None
    try:
        status = ingest_trace(engine=engine, settings=settings, trace_id=trace_id, force=force)
    except Exception as e:  # ingest_trace has marked it failed; the rest go on
        log.exception("re-ingest of trace %s failed", trace_id)
        status, fallback = TraceStatus.FAILED, f"{type(e).__name__}: {e}"
    with Session(engine) as session:  # named columns: this runs at revision 0014 too
        query = select(Trace.error, Trace.event_counts).where(col(Trace.id) == trace_id)
        row = session.exec(query).first()
        if row is None or status is None:
            return Reindexed(None)
        error, counts = row
        if status != TraceStatus.READY:
            return Reindexed(status, error=error or fallback)
        return Reindexed(status, events=sum(counts.values()))
