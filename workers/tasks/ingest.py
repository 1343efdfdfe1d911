"""`ingest_trace`: a thin adapter from a task id to `backend.services.loading.pipeline`.

The soft time limit fails the trace with a message and leaves the worker running; the hard
limit (the child is killed) leaves a `processing` row that the sweeper retries, then fails.
"""

from __future__ import annotations

from celery.exceptions import SoftTimeLimitExceeded
from sqlalchemy.exc import OperationalError

from backend.core.config import get_settings
from backend.core.db import get_engine
from backend.core.task_names import INGEST_TRACE
from backend.services.loading import ingest_trace as run_ingest
from workers import sweeper  # noqa: F401  (connects the worker_ready signal)
from workers.celery_app import app

_LIMIT_S = get_settings().ingest_time_limit_s


@app.task(  # type: ignore[untyped-decorator]
    name=INGEST_TRACE,
    autoretry_for=(OperationalError, ConnectionError),
    retry_backoff=True,
    max_retries=5,
    # Leave the soft limit room to roll back and write the failure before the hard kill:
    # 10 % of the limit, at least 1 s and at most 30 s.
    soft_time_limit=max(_LIMIT_S * 0.5, _LIMIT_S - max(1.0, min(30.0, _LIMIT_S * 0.1))),
    time_limit=_LIMIT_S,
)
def ingest_trace(trace_id: str) -> str | None:
    """Parse the trace's blob into the DB; bad input marks it failed rather than raising."""
    status = run_ingest(
        engine=get_engine(),
        settings=get_settings(),
        trace_id=trace_id,
        time_limit_errors=(SoftTimeLimitExceeded,),
    )
    return status.value if status else None
