"""Browser fixtures: a real `perfdash serve` per test (or per module, where each test
opens only traces it uploaded itself) and Debian's headless Chromium.

The server is the product as users run it (API, dashboard and a Celery worker over the
embedded broker), on a free port with its own data dir, and its whole process group
is stopped after the test (or the module).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, Response, sync_playwright

from tests.real_worker import stop_process_group

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
STARTUP_TIMEOUT_S = 90.0
# The label cells of the trace page's kernels grid, one per row (the column is pinned).
KERNEL_LABELS = '#trace-kernels-table .ag-cell[col-id="label"]'


@dataclass
class Server:
    """A running `perfdash serve`, and where its log goes if a test needs to say why."""

    base_url: str
    log_path: Path
    process: subprocess.Popen[bytes]
    env: dict[str, str]

    def log_tail(self, lines: int = 40) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


@dataclass
class PageErrors:
    """Failures a user would not see as a Python exception: 5xx callbacks, JS errors."""

    messages: list[str] = field(default_factory=list)

    def on_response(self, response: Response) -> None:
        if response.status >= 500:
            self.messages.append(f"{response.status} {response.url}")

    def on_page_error(self, error: Exception) -> None:
        self.messages.append(f"page error: {error}")

    def on_console(self, message: ConsoleMessage) -> None:
        """Console errors, such as Dash's "ID not found in layout" for a broken callback.
        Failed resource loads are left to `on_response`, which knows their status."""
        if message.type == "error" and not message.text.startswith("Failed to load resource"):
            self.messages.append(f"console error: {message.text[:2000]}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _perfdash_command() -> list[str]:
    script = Path(sys.executable).with_name("perfdash")
    return [str(script)] if script.exists() else [sys.executable, "-m", "workers.cli"]


def _wait_healthy(server: Server) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            pytest.fail(f"perfdash serve exited early:\n{server.log_tail()}")
        try:
            if httpx.get(f"{server.base_url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    pytest.fail(
        f"perfdash serve was not healthy in {STARTUP_TIMEOUT_S:.0f} s:\n{server.log_tail()}"
    )


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop uvicorn and the worker it spawned."""
    stop_process_group(process, grace_s=20)


def _spawn(args: list[str], env: dict[str, str], log_path: Path) -> subprocess.Popen[bytes]:
    """A perfdash command as the leader of its own process group, logging to a file."""
    with log_path.open("ab") as log:
        return subprocess.Popen(
            [*_perfdash_command(), *args],
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _serve(tmp_path: Path, *extra: str, settings: dict[str, str] | None = None) -> Iterator[Server]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERFDASH_")}
    env["PERFDASH_DATA_DIR"] = str(tmp_path / "var")
    env.update({f"PERFDASH_{k.upper()}": v for k, v in (settings or {}).items()})
    port = _free_port()
    log_path = tmp_path / "serve.log"
    process = _spawn(["serve", "--port", str(port), "--no-samples", *extra], env, log_path)
    server = Server(f"http://127.0.0.1:{port}", log_path, process, env)
    try:
        _wait_healthy(server)
        yield server
    finally:
        _stop(process)


@pytest.fixture
def perfdash_server(tmp_path: Path) -> Iterator[Server]:
    """`perfdash serve --no-samples` (API, dashboard, worker) with an empty data dir."""
    yield from _serve(tmp_path)


@pytest.fixture(scope="module")
def module_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One `perfdash serve --no-samples` for all tests of a module whose tests each upload
    their own traces and open only those, by id (a server takes seconds to start)."""
    yield from _serve(tmp_path_factory.mktemp("serve"))


@pytest.fixture
def server_without_worker(tmp_path: Path) -> Iterator[Server]:
    """The same with `--no-worker`, so uploads stay queued until a test starts a worker."""
    yield from _serve(tmp_path, "--no-worker")


@pytest.fixture
def serve_with(tmp_path: Path) -> Iterator[Callable[..., Server]]:
    """`serve_with(*args, **settings)`: `perfdash serve --no-samples` with PERFDASH_<KEY>
    settings (e.g. auth="password"); every server started is stopped after the test."""
    with contextlib.ExitStack() as stack:

        def start(*extra: str, **settings: str) -> Server:
            served = contextlib.contextmanager(_serve)(tmp_path, *extra, settings=settings)
            return stack.enter_context(served)

        yield start


def perfdash(server: Server, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run a `perfdash` command (e.g. `user add`) on a server's data dir and settings."""
    return subprocess.run(
        [*_perfdash_command(), *args], cwd=REPO, env={**server.env, **env}, capture_output=True,
        text=True, timeout=120, check=True,
    )  # fmt: skip


def upload_and_wait(server: Server, content: bytes, name: str) -> dict[str, Any]:
    """Upload through the API and wait until the worker has parsed it; the trace as the API
    gives it (a failed parse fails the test with its error)."""
    r = httpx.post(f"{server.base_url}/api/v1/traces", files={"file": (name, content)}, timeout=60)
    assert r.status_code == 202, r.text
    trace_id = str(r.json()["id"])
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        trace = httpx.get(f"{server.base_url}/api/v1/traces/{trace_id}", timeout=10).json()
        if trace["status"] in ("ready", "failed"):
            assert trace["status"] == "ready", trace["error"]
            return dict(trace)
        time.sleep(0.3)
    pytest.fail(f"{name} was not parsed in 90 s:\n{server.log_tail()}")


@pytest.fixture
def start_worker(tmp_path: Path) -> Iterator[Callable[[Server], None]]:
    """Start a `perfdash worker` on a server's data dir; it is stopped after the test."""
    workers: list[subprocess.Popen[bytes]] = []

    def start(server: Server) -> None:
        args = ["worker", "--queues", "ingest", "--concurrency", "1"]
        workers.append(_spawn(args, server.env, tmp_path / "worker.log"))

    try:
        yield start
    finally:
        for worker in workers:
            _stop(worker)


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    """Debian's Chromium, headless; the test is skipped only if it is not installed."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)")
    with sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh page in its own context, at a laptop-sized viewport."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.fixture
def page_errors(page: Page) -> PageErrors:
    """Server errors and script errors seen by `page`, for a test to assert are none."""
    errors = PageErrors()
    page.on("response", errors.on_response)
    page.on("pageerror", errors.on_page_error)
    page.on("console", errors.on_console)
    return errors


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """`test-artifacts/` at the repo root (gitignored), for screenshots worth a look."""
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
