"""The Celery app of the workers. Importing it builds the app and registers tasks, nothing more."""

from __future__ import annotations

from celery import Celery

from backend.core.celery_config import celery_config
from backend.core.config import get_settings

app = Celery(
    "perfdash", include=["workers.tasks.ingest", "workers.tasks.alerts", "workers.tasks.bench"]
)
app.conf.update(celery_config(get_settings()))
