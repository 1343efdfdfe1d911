"""`perfdash bench run` against a real uvicorn: a run no runner can take is said so, and
`--wait` gives up at `--timeout` instead of hanging."""

from __future__ import annotations

import time

import httpx
import pytest
from sqlmodel import Session

from backend.core.db import get_engine
from backend.services.benchmarks.runners import register_runner
from workers.cli.main import main

SPEC = {"name": "copy-small", "workload": "copy", "sweep": {"size_bytes": [4096]}}
WARNING = (
    "perfdash: warning: no runner on queue gpu; start `perfdash worker --queues gpu` on a GPU host"
)


def test_wait_with_no_runner_warns_and_gives_up_at_the_timeout(
    server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert httpx.post(f"{server}/api/v1/benchmarks", json=SPEC).status_code == 200
    argv = ["bench", "run", "copy-small", "--url", server]
    began = time.monotonic()
    assert main([*argv, "--wait", "--timeout", "1"]) == 2
    assert time.monotonic() - began < 30  # it gave up rather than wait out the old hour
    out, err = capsys.readouterr()
    assert out.startswith("queued run ")
    lines = err.splitlines()
    assert lines[0] == WARNING and lines.count(WARNING) == 1
    assert "is still queued after 1 s; giving up" in lines[-1]

    with Session(get_engine()) as session:
        register_runner(session, name="w@gpu", hostname="gpu", queues=["gpu"], capabilities={})
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert out.startswith("queued run ") and err == ""
