"""Run the re-enqueue sweeper when an ingest worker starts, then every SWEEP_INTERVAL_S;
each sweep also removes archive scratch folders that killed ingests left behind.

A thread in the worker's main process rather than a Celery beat entry, so the embedded
`perfdash serve` (one worker, no beat) sweeps too. Several workers sweeping at once is
safe: `sweep_traces` touches each row conditionally before sending it.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from celery.signals import worker_ready, worker_shutdown

from backend.core.config import get_settings
from backend.core.db import get_engine
from backend.core.task_names import INGEST_QUEUE
from backend.services.requeue import sweep_traces
from ingest.archive import remove_stale_scratch

log = logging.getLogger(__name__)
_stop = threading.Event()


def sweep_once() -> None:
    """One sweep; an error is logged and never stops the worker."""
    try:
        sweep_traces(engine=get_engine(), settings=get_settings())
    except Exception:
        log.warning(
            "trace sweeper failed; next try in %ss", get_settings().sweep_interval_s, exc_info=True
        )
    sweep_scratch()


def sweep_scratch() -> None:
    """Remove archive folders that killed workers left in TMPDIR: older than the hard time
    limit plus the claim grace, so no live ingest's folder is touched."""
    settings = get_settings()
    for folder in remove_stale_scratch(settings.ingest_time_limit_s + settings.claim_grace_s):
        log.warning("removed scratch folder %s left by a killed ingest", folder)


def _loop() -> None:
    while not _stop.wait(get_settings().sweep_interval_s):
        sweep_once()


@worker_ready.connect  # type: ignore[untyped-decorator]
def on_worker_ready(sender: Any, **_: Any) -> None:
    """Sweep now (traces left by a broker outage or a killed worker), then periodically."""
    if INGEST_QUEUE not in (sender.app.amqp.queues.consume_from or {}):
        return
    sweep_once()
    threading.Thread(target=_loop, name="trace-sweeper", daemon=True).start()


@worker_shutdown.connect  # type: ignore[untyped-decorator]
def on_worker_shutdown(**_: Any) -> None:
    """Stop the periodic sweep."""
    _stop.set()
