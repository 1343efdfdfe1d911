"""Run the sweepers when a CPU worker starts, then every SWEEP_INTERVAL_S: the trace
re-enqueue sweeper, the blob sweeper and the archive scratch sweeper (workers of the `ingest`
queue) and the outbox sweeper (workers of the `ingest` or `webhooks` queue), which sends the
benchmark runs and webhook deliveries whose message met a broker that was down.

A thread in the worker's main process rather than a Celery beat entry, so the embedded
`perfdash serve` (one worker, no beat) sweeps too. Several workers sweeping at once is
safe: `sweep_traces` and the outbox sweeper take each row with a conditional UPDATE before
sending it, and `sweep_blobs` sets a blob aside before it checks the row again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from celery.signals import worker_ready, worker_shutdown

from backend.core.config import Settings, get_settings
from backend.core.db import get_engine
from backend.core.task_names import CPU_QUEUES, INGEST_QUEUE
from backend.services.loading import sweep_traces
from backend.services.outbox import sweep_outbox
from backend.services.traces import sweep_blobs
from ingest.archive import remove_stale_scratch

log = logging.getLogger(__name__)
_stop = threading.Event()


def sweep_once(traces: bool = True) -> None:
    """One sweep of the outbox, and (if asked: `ingest` workers) of the traces, the blob
    store and archive scratch; an error is logged and never stops the worker, nor the other
    sweeps."""
    settings, engine = get_settings(), get_engine()
    sweeps: list[tuple[str, Callable[..., object]]] = [("outbox", sweep_outbox)]
    if traces:
        sweeps += [("trace", sweep_traces), ("blob", sweep_blobs), ("scratch", sweep_scratch)]
    for name, sweep in sweeps:
        try:
            sweep(engine=engine, settings=settings)
        except Exception:
            log.warning(
                "%s sweeper failed; next try in %ss", name, settings.sweep_interval_s, exc_info=True
            )


def sweep_scratch(*, engine: object, settings: Settings) -> None:
    """Remove archive folders that killed workers left in TMPDIR: older than the hard time
    limit plus the claim grace, so no live ingest's folder is touched."""
    for folder in remove_stale_scratch(settings.ingest_time_limit_s + settings.claim_grace_s):
        log.warning("removed scratch folder %s left by a killed ingest", folder)


def _loop(traces: bool) -> None:
    while not _stop.wait(get_settings().sweep_interval_s):
        sweep_once(traces)


@worker_ready.connect  # type: ignore[untyped-decorator]
def on_worker_ready(sender: Any, **_: Any) -> None:
    """Sweep now (what a broker outage or a killed worker left), then periodically."""
    queues = set(sender.app.amqp.queues.consume_from or {})
    if not queues & set(CPU_QUEUES):
        return
    traces = INGEST_QUEUE in queues
    sweep_once(traces)
    threading.Thread(target=_loop, args=(traces,), name="sweeper", daemon=True).start()


@worker_shutdown.connect  # type: ignore[untyped-decorator]
def on_worker_shutdown(**_: Any) -> None:
    """Stop the periodic sweep."""
    _stop.set()
