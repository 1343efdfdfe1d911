"""Small builders shared by the metrics tests."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import HTTPServer
from typing import Any, TypeVar

_Server = TypeVar("_Server", bound=HTTPServer)


def native(
    *,
    commit: str = "c0",
    run_id: str | None = None,
    branch: str = "main",
    benchmark: str = "train",
    points: list[dict[str, Any]] | None = None,
    environment: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A native metrics document with sensible defaults."""
    return {
        "project": "llm",
        "benchmark": benchmark,
        "commit": commit,
        "branch": branch,
        "run_id": run_id or f"run-{commit}",
        "environment": environment or {"gpu_model": "H200"},
        "points": points
        or [{"metric": "step_time_ms", "unit": "ms", "samples": [10.0, 11.0, 12.0]}],
        **extra,
    }


@contextmanager
def serving(server: _Server) -> Iterator[_Server]:
    """Run a local HTTP receiver (bound to 127.0.0.1) in a thread while the block runs."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
