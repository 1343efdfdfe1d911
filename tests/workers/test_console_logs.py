"""What the `perfdash` commands print on the terminal: a migration says so when it runs
and nothing otherwise; `serve` logs no line per request unless `PERFDASH_ACCESS_LOG=true`.

Real processes (the console script's module) on a private SQLite data dir."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.databases import MigratedTemplates
from tests.real_worker import stop_process_group

STARTUP_S = 60.0


def _env(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERFDASH_")}
    return env | {"PERFDASH_DATA_DIR": str(data_dir)} | extra


def _perfdash(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "workers.cli", *args],
        capture_output=True, text=True, timeout=120, env=env, check=False,
    )  # fmt: skip


def test_migrations_speak_only_when_they_migrate(tmp_path: Path) -> None:
    env = _env(tmp_path / "var")
    first = _perfdash(env, "token", "list")
    assert first.returncode == 0, first.stderr
    ran = [line for line in first.stderr.splitlines() if "Running upgrade" in line]
    migrations = sorted(Path("backend/migrations/versions").glob("0*.py"))
    assert len(ran) == len(migrations) > 10  # a fresh database: each migration, one line
    assert "alembic.runtime.plugins" not in first.stderr
    assert "Context impl" not in first.stderr and "Will assume" not in first.stderr

    again = _perfdash(env, "token", "list")
    assert again.returncode == 0, again.stderr
    assert again.stderr == ""
    assert again.stdout.split() == ["ID", "PREFIX", "NAME", "SCOPES", "CREATED", "LAST",
                                    "USED", "REVOKED"]  # fmt: skip


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _start(env: dict[str, str], log_path: Path) -> tuple[subprocess.Popen[bytes], str]:
    """`perfdash serve --no-worker --no-samples` on a free port; (process, URL)."""
    port = _free_port()
    args = ["serve", "--no-worker", "--no-samples", "--port", str(port)]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "workers.cli", *args],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env,
        )  # fmt: skip
    return proc, f"http://127.0.0.1:{port}"


def _wait_up(proc: subprocess.Popen[bytes], url: str, log_path: Path) -> None:
    deadline = time.monotonic() + STARTUP_S
    while not _answers(url):
        assert proc.poll() is None, log_path.read_text(errors="replace")
        assert time.monotonic() < deadline, "perfdash serve did not start"
        time.sleep(0.2)


def _answers(url: str) -> bool:
    with contextlib.suppress(httpx.HTTPError):
        return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
    return False


def _migrated_copy(templates: MigratedTemplates, folder: Path) -> str:
    """A SQLite database at the head migration (so `serve` starts without migrating)."""
    folder.mkdir()
    with templates.clone("sqlite", folder) as url:
        return url  # a file: nothing to drop afterwards


@pytest.mark.integration
def test_serve_access_log_is_off_unless_asked_for(
    tmp_path: Path, migrated_templates: MigratedTemplates
) -> None:
    """Two servers side by side (they start in parallel): the default, and the setting on."""
    servers = {}
    try:
        for setting in ("", "true"):
            folder = tmp_path / (setting or "default")
            extra = {"PERFDASH_DATABASE_URL": _migrated_copy(migrated_templates, folder)}
            extra |= {"PERFDASH_ACCESS_LOG": setting} if setting else {}
            log_path = tmp_path / f"serve-{setting or 'default'}.log"
            servers[setting] = (*_start(_env(folder / "var", **extra), log_path), log_path)
        for proc, url, log_path in servers.values():
            _wait_up(proc, url, log_path)
            assert httpx.get(f"{url}/api/v1/benchmarks", timeout=10).status_code == 200
            assert httpx.get(f"{url}/benchmarks", timeout=30).status_code == 200
    finally:
        for proc, _url, _log in servers.values():
            stop_process_group(proc)
    logs = {k: log.read_text(errors="replace") for k, (_p, _u, log) in servers.items()}
    request = '"GET /api/v1/benchmarks HTTP/1.1" 200'
    assert request not in logs[""] and "Uvicorn running on" in logs[""]
    assert "HTTP Request:" not in logs[""]  # nor the dashboard's calls to the API
    assert request in logs["true"] and '"GET /benchmarks HTTP/1.1" 200' in logs["true"]
