"""A worker that consumes a benchmark queue registers itself as a runner and heartbeats.

On `worker_ready`, the capabilities (GPUs, driver, CUDA, torch) are probed by running
`python -m workers.bench.fingerprint` in a subprocess, because importing torch and
touching CUDA in the worker's parent process would break CUDA in its forked children.
A daemon thread then refreshes `last_seen_at`; `worker_shutdown` marks the runner
offline. Workers on the `ingest` queue alone are not runners and do nothing here.
"""

from __future__ import annotations

import json
import logging
import socket
import subprocess
import sys
import threading
from typing import Any

from celery.signals import worker_ready, worker_shutdown
from sqlmodel import Session

from backend.core.db import get_engine
from backend.core.task_names import CPU_QUEUES
from backend.services.benchmarks import (
    HEARTBEAT_EVERY,
    heartbeat,
    mark_offline,
    register_runner,
)

log = logging.getLogger(__name__)
PROBE_TIMEOUT_S = 120
_stop = threading.Event()
_name: list[str] = []


def probe_capabilities() -> dict[str, Any]:
    """This host's GPUs and versions, from a subprocess; an `error` key if it failed."""
    cmd = [sys.executable, "-m", "workers.bench.fingerprint"]
    try:
        proc = subprocess.run(cmd, capture_output=True, timeout=PROBE_TIMEOUT_S, check=True)
        caps: dict[str, Any] = json.loads(proc.stdout)
    except (subprocess.SubprocessError, OSError, ValueError) as e:
        return {"hostname": socket.gethostname(), "gpus": [], "error": str(e)[:500]}
    return caps


def _beat(name: str) -> None:
    while not _stop.wait(HEARTBEAT_EVERY.total_seconds()):
        try:
            with Session(get_engine()) as session:
                heartbeat(session, name)
        except Exception:  # a missed heartbeat must never stop the worker
            log.warning("runner heartbeat failed", exc_info=True)


@worker_ready.connect  # type: ignore[untyped-decorator]
def on_worker_ready(sender: Any, **_: Any) -> None:
    """Register the runner (benchmark queues only) and start its heartbeat."""
    queues = sorted(sender.app.amqp.queues.consume_from or {})
    if not set(queues) - set(CPU_QUEUES):
        return
    name = str(getattr(sender, "hostname", "") or socket.gethostname())
    caps = probe_capabilities()
    with Session(get_engine()) as session:
        register_runner(
            session,
            name=name,
            hostname=str(caps.get("hostname") or socket.gethostname()),
            queues=queues,
            capabilities=caps,
        )
    _name[:] = [name]
    threading.Thread(target=_beat, args=(name,), name="runner-heartbeat", daemon=True).start()
    log.info("registered runner %s for queues %s with %d GPU(s)", name, queues, len(caps["gpus"]))


@worker_shutdown.connect  # type: ignore[untyped-decorator]
def on_worker_shutdown(**_: Any) -> None:
    """Mark this runner offline on a clean shutdown."""
    _stop.set()
    if _name:
        with Session(get_engine()) as session:
            mark_offline(session, _name[0])
