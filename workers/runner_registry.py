"""A worker that consumes a benchmark queue registers itself as a runner and heartbeats.

On `worker_ready`, the capabilities (GPUs, driver, CUDA, torch) are probed by running
`python -m workers.bench.fingerprint` in a subprocess, because importing torch and
touching CUDA in the worker's parent process would break CUDA in its forked children.
A runner also consumes `runner.<name>`, its own queue, for bisects (same-runner A/B).
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

from celery.signals import celeryd_after_setup, worker_ready, worker_shutdown
from sqlmodel import Session

from backend.core.db import get_engine
from backend.core.task_names import CPU_QUEUES, runner_queue
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


def _is_runner(queues: list[str]) -> bool:
    return bool(set(queues) - set(CPU_QUEUES))


@celeryd_after_setup.connect  # type: ignore[untyped-decorator]
def add_runner_queue(sender: str, instance: Any, **_: Any) -> None:
    """A runner also consumes a queue of its own (`runner.<name>`), so a bisect can send
    every run of an A/B comparison to the same machine (Celery's direct-queue recipe)."""
    queues = list(instance.app.amqp.queues.consume_from or {})
    if _is_runner(queues):
        instance.app.amqp.queues.select_add(runner_queue(sender))


@worker_ready.connect  # type: ignore[untyped-decorator]
def on_worker_ready(sender: Any, **_: Any) -> None:
    """Register the runner (benchmark queues only) and start its heartbeat."""
    name = str(getattr(sender, "hostname", "") or socket.gethostname())
    own = runner_queue(name)
    queues = sorted(q for q in sender.app.amqp.queues.consume_from or {} if q != own)
    if not _is_runner(queues):
        return
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
