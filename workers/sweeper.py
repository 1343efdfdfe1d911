"""Run the re-enqueue sweeper when an ingest worker starts, then every SWEEP_INTERVAL_S.

A thread in the worker's main process rather than a Celery beat entry, so the embedded
`perfdash serve` (one worker, no beat) sweeps too. Several workers sweeping at once is
safe: `sweep_traces` touches each row conditionally before sending it, and `sweep_blobs`
sets a blob aside before it checks the row again.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from celery.signals import worker_ready, worker_shutdown

from backend.core.config import get_settings
from backend.core.db import get_engine
from backend.core.task_names import INGEST_QUEUE
from backend.services.blob_sweep import sweep_blobs
from backend.services.requeue import sweep_traces

log = logging.getLogger(__name__)
_stop = threading.Event()


def sweep_once() -> None:
    """One sweep of the traces, then of the blob store; an error is logged and never stops
    the worker, nor the other sweep."""
    for what, sweep in (("trace", sweep_traces), ("blob", sweep_blobs)):
        try:
            sweep(engine=get_engine(), settings=get_settings())
        except Exception:
            log.warning(
                "%s sweeper failed; next try in %ss",
                what,
                get_settings().sweep_interval_s,
                exc_info=True,
            )


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
