"""`deliver_webhook`: a thin adapter from a delivery id and attempt number to
`backend.services.slas.alerts.deliver`, on the `webhooks` queue.

Retries are not Celery retries: each failed attempt writes the next one's outbox message
in the same transaction as its log entry (`alerts.deliver`), so a broker outage or a dead
worker cannot lose them. Only a database outage is retried here.
"""

from __future__ import annotations

from sqlalchemy.exc import OperationalError

from backend.core.config import get_settings
from backend.core.db import get_engine
from backend.core.task_names import DELIVER_WEBHOOK
from backend.services.slas import deliver
from workers.celery_app import app


@app.task(  # type: ignore[untyped-decorator]
    name=DELIVER_WEBHOOK,
    max_retries=5,
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    soft_time_limit=60,
    time_limit=90,
)
def deliver_webhook(delivery_id: str, attempt: str = "0") -> str | None:
    """Make one attempt of a webhook delivery (a duplicate message makes none)."""
    settings = get_settings()
    status = deliver(get_engine(), int(delivery_id), int(attempt or 0), settings=settings)
    return status.value if status else None
