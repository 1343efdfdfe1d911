"""Celery configuration shared by the producer (API) and the workers, built from Settings."""

from typing import Any

from backend.core.config import Settings
from backend.core.task_names import DELIVER_WEBHOOK, INGEST_QUEUE, INGEST_TRACE, WEBHOOKS_QUEUE


def celery_config(settings: Settings) -> dict[str, Any]:
    """Return Celery settings: JSON only, late acks, prefetch 1, queues by task name."""
    config: dict[str, Any] = {
        "broker_url": settings.resolved_broker_url,
        "task_serializer": "json",
        "result_serializer": "json",
        "accept_content": ["json"],
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        "task_ignore_result": True,
        "task_default_queue": INGEST_QUEUE,
        "task_routes": {
            INGEST_TRACE: {"queue": INGEST_QUEUE},
            DELIVER_WEBHOOK: {"queue": WEBHOOKS_QUEUE},
        },
        "task_create_missing_queues": True,
        "broker_connection_retry_on_startup": True,
        "worker_hijack_root_logger": False,
        "broker_transport_options": {
            # Redis redelivers unacked tasks after this; keep it above the longest time limit.
            "visibility_timeout": settings.visibility_timeout_s,
            # Look for lapsed messages every tenth of the timeout (kombu: 10 x 10 s).
            "unacked_restore_interval": max(1, min(10, settings.visibility_timeout_s // 10)),
            "unacked_restore_throttle": 1,
        },
    }
    if config["broker_url"].startswith("filesystem://"):
        folder = settings.broker_dir
        for sub in ("queue", "processed", "control"):
            (folder / sub).mkdir(parents=True, exist_ok=True)
        config["broker_transport_options"] = {
            "data_folder_in": str(folder / "queue"),
            "data_folder_out": str(folder / "queue"),
            "processed_folder": str(folder / "processed"),
            "control_folder": str(folder / "control"),
            "store_processed": False,
            "polling_interval": 0.1,
        }
    return config
