"""`ingest_trace`: a thin adapter from a task id to `backend.services.trace_ingest`."""

from __future__ import annotations

from sqlalchemy.exc import OperationalError

from backend.core.config import get_settings
from backend.core.db import get_engine
from backend.core.task_names import INGEST_TRACE
from backend.services.trace_ingest import ingest_trace as run_ingest
from workers.celery_app import app


@app.task(  # type: ignore[untyped-decorator]
    name=INGEST_TRACE,
    autoretry_for=(OperationalError, ConnectionError),
    retry_backoff=True,
    max_retries=5,
    soft_time_limit=get_settings().ingest_time_limit_s - 30,
    time_limit=get_settings().ingest_time_limit_s,
)
def ingest_trace(trace_id: str) -> str | None:
    """Parse the trace's blob into the DB; bad input marks it failed rather than raising."""
    status = run_ingest(engine=get_engine(), settings=get_settings(), trace_id=trace_id)
    return status.value if status else None
