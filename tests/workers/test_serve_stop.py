"""Stopping `perfdash serve` (SIGTERM from a service manager, SIGINT from Ctrl-C) stops the
Celery worker it started, pool processes included.

`perfdash serve` runs as the leader of its own process group; the worker it spawns and
the worker's pool stay in that group, so the group's members, read from /proc, are the
processes it started. Only the leader is signalled, as a service manager would.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.browser.conftest import Server, _free_port, _spawn, _wait_healthy
from tests.real_worker import stop_process_group

pytestmark = pytest.mark.integration
STOP_TIMEOUT_S = 45.0  # above serve's 20 s warm plus 10 s cold shutdown of the worker


def _group_members(pgid: int) -> set[int]:
    """Live (not zombie) processes whose process group is `pgid`, from /proc."""
    members = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # exited while we looked
        # Fields after the parenthesised command: state, ppid, pgrp, ...
        state, _ppid, pgrp = stat.rsplit(")", 1)[1].split()[:3]
        if int(pgrp) == pgid and state != "Z":
            members.add(int(entry.name))
    return members


def _wait_for(predicate: Callable[[], bool], timeout_s: float, what: str, server: Server) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    pytest.fail(f"{what} within {timeout_s:.0f} s:\n{server.log_tail()}")


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Server]:
    """`perfdash serve` with a one-process worker; its whole group is killed afterwards,
    whatever the test saw, so a failing test leaves nothing running."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERFDASH_")}
    env["PERFDASH_DATA_DIR"] = str(tmp_path / "var")
    env["PERFDASH_SERVE_WORKER_CONCURRENCY"] = "1"
    port = _free_port()
    log_path = tmp_path / "serve.log"
    process = _spawn(["serve", "--port", str(port), "--no-samples"], env, log_path)
    server = Server(f"http://127.0.0.1:{port}", log_path, process, env)
    try:
        _wait_healthy(server)
        yield server
    finally:
        stop_process_group(process, grace_s=5)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_signal_to_serve_stops_its_worker(serve: Server, sig: signal.Signals) -> None:
    pgid = serve.process.pid
    # serve, the worker's main process and its pool process: the worker is fully up.
    _wait_for(lambda: len(_group_members(pgid)) >= 3, 60, "the worker did not start", serve)
    workers = _group_members(pgid) - {pgid}

    serve.process.send_signal(sig)
    try:
        code = serve.process.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"serve did not exit on {sig.name}:\n{serve.log_tail()}")
    _wait_for(lambda: not _group_members(pgid), 5, f"{workers} outlived serve", serve)
    assert code == 0, serve.log_tail()
    assert "Traceback" not in serve.log_path.read_text(errors="replace")
