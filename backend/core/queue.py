"""Producer-only Celery client: the API enqueues tasks by name, after its commit.

The database, not the broker, is the source of truth: a row committed as `queued` whose
message never reached the broker is found and re-sent by `backend.services.loading.requeue`.
"""

import logging
from functools import lru_cache
from typing import Any

from celery import Celery

from backend.core.celery_config import celery_config
from backend.core.config import get_settings

log = logging.getLogger(__name__)


@lru_cache
def get_producer() -> Celery:
    """A Celery app used only to send tasks; it registers no tasks itself."""
    app = Celery("perfdash-producer")
    app.conf.update(celery_config(get_settings()))
    return app


def enqueue(task_name: str, *args: str, queue: str, **options: Any) -> None:
    """Send task `task_name` with string ids; call only after the DB commit.

    `options` are Celery's `send_task` options (countdown, soft_time_limit, time_limit).
    """
    get_producer().send_task(task_name, args=list(args), queue=queue, **options)


def try_enqueue(task_name: str, *args: str, queue: str, **options: Any) -> bool:
    """Like `enqueue`, but a broker outage is logged and reported as False, not raised.

    Callers whose row is already committed use this: the sweeper re-sends the task later.
    """
    try:
        enqueue(task_name, *args, queue=queue, **options)
    except Exception as e:  # kombu raises OperationalError, redis its own; all mean "not sent"
        log.warning(
            "broker unreachable, %s%s not sent (the sweeper retries): %s", task_name, args, e
        )
        return False
    return True


def check_broker(timeout_s: float = 3.0) -> None:
    """Raise if the broker cannot be reached within `timeout_s`."""
    with get_producer().connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, timeout=timeout_s)
