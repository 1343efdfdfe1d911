"""`perfdash serve` starts its Celery worker with one process per CPU core, or as set."""

from __future__ import annotations

import os

import pytest

from backend.core.config import get_settings


def _spawned_concurrency(monkeypatch: pytest.MonkeyPatch) -> int:
    from workers.cli import main as cli

    started: list[list[str]] = []
    monkeypatch.setattr("workers.cli.main.subprocess.Popen", started.append)
    cli._spawn_worker()
    [cmd] = started
    return int(cmd[cmd.index("--concurrency") + 1])


def test_the_embedded_worker_uses_every_core_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PERFDASH_SERVE_WORKER_CONCURRENCY", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 6)
    get_settings.cache_clear()
    try:
        assert _spawned_concurrency(monkeypatch) == 6
    finally:
        get_settings.cache_clear()


def test_the_embedded_worker_concurrency_is_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERFDASH_SERVE_WORKER_CONCURRENCY", "3")
    get_settings.cache_clear()
    try:
        assert _spawned_concurrency(monkeypatch) == 3
    finally:
        get_settings.cache_clear()


@pytest.mark.parametrize("value", ["0", "65", "two"])
def test_a_concurrency_out_of_range_is_refused(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("PERFDASH_SERVE_WORKER_CONCURRENCY", value)
    get_settings.cache_clear()
    try:
        with pytest.raises(ValueError, match="serve_worker_concurrency"):
            get_settings()
    finally:
        get_settings.cache_clear()
