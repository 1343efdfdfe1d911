"""Producer-only Celery client: the API enqueues tasks by name, after its commit."""

from functools import lru_cache

from celery import Celery

from backend.core.celery_config import celery_config
from backend.core.config import get_settings


@lru_cache
def get_producer() -> Celery:
    """A Celery app used only to send tasks; it registers no tasks itself."""
    app = Celery("perfdash-producer")
    app.conf.update(celery_config(get_settings()))
    return app


def enqueue(task_name: str, *args: str, queue: str) -> None:
    """Send task `task_name` with string ids; call only after the DB commit."""
    get_producer().send_task(task_name, args=list(args), queue=queue)


def check_broker(timeout_s: float = 3.0) -> None:
    """Raise if the broker cannot be reached within `timeout_s`."""
    with get_producer().connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, timeout=timeout_s)
