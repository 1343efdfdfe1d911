"""The Celery app of the workers. Importing it builds the app and registers tasks, nothing more."""

from __future__ import annotations

from typing import Any

from celery import Celery
from celery.signals import worker_process_init

from backend.core.celery_config import celery_config
from backend.core.config import get_settings
from backend.core.db import get_engine

app = Celery(
    "perfdash",
    include=[
        "workers.tasks.ingest",
        "workers.tasks.alerts",
        "workers.tasks.benchmarks",
        "workers.tasks.bisect",
    ],
)
app.conf.update(celery_config(get_settings()))


@worker_process_init.connect  # type: ignore[untyped-decorator]
def _fresh_connections_in_pool_child(**_: Any) -> None:
    """Drop the database connections a forked pool child inherited from the main process.

    The main process holds pooled connections (its trace sweeper queries every
    SWEEP_INTERVAL_S), and the pool forks a replacement child whenever one dies (a hard time
    limit, a crash). Two processes talking over one PostgreSQL socket corrupt each other's
    protocol stream ("the connection is lost"). `close=False` leaves the parent's sockets
    open for the parent; the child opens its own on first use (SQLAlchemy's recipe).
    """
    get_engine().dispose(close=False)
