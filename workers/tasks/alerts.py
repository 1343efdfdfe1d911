"""`deliver_webhook`: a thin adapter from a delivery id to `backend.services.alerts.deliver`.

Retries with exponential backoff (1, 2, 4, 8, 16 s) on a failed attempt; the last attempt
marks the delivery `failed`. Every attempt is written to the delivery log first.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.exc import OperationalError

from backend.core.db import get_engine
from backend.core.task_names import DELIVER_WEBHOOK
from backend.services.alerts import DeliveryFailed, deliver
from workers.celery_app import app

MAX_RETRIES = 5


@app.task(  # type: ignore[untyped-decorator]
    name=DELIVER_WEBHOOK,
    bind=True,
    max_retries=MAX_RETRIES,
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    soft_time_limit=60,
    time_limit=90,
)
def deliver_webhook(self: Any, delivery_id: str) -> str | None:
    """Send one webhook delivery; retry with backoff while attempts remain."""
    final = self.request.retries >= MAX_RETRIES
    try:
        status = deliver(get_engine(), int(delivery_id), final=final)
    except DeliveryFailed as e:
        raise self.retry(exc=e, countdown=2**self.request.retries) from e
    return status.value if status else None
