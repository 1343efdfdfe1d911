"""The CPU bisect proof as a user runs it, ending in a screenshot of the bisect panel.

Starts `perfdash serve` (SQLite, filesystem broker, ingest worker) and `perfdash worker
--queues gpu --concurrency 1` on a fresh data dir, builds the 11-commit `slowpkg`
repository of `tests/bench/test_bisect_worker.py` (2x slower from commit 6), stores the
spec, starts a bisect c0..c10 over HTTP, waits for it to end, prints it as JSON and
screenshots `/benchmarks/slow`.

    python perf/bisect_proof/run_proof.py docs/img/bisect_panel.png > result.json
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import sync_playwright

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from tests.bench.test_bisect_worker import SLOW_FROM, make_repo  # noqa: E402
from tests.real_worker import stop_process_group  # noqa: E402


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _spawn(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "workers.cli", *args]
    with log.open("ab") as out:
        return subprocess.Popen(
            command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def _until(check: Any, timeout_s: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            got = check()
        except httpx.HTTPError:
            got = None
        if got:
            return got
        time.sleep(0.5)
    raise SystemExit(f"timed out waiting for {what}")


def _ended(bisect: dict[str, Any]) -> dict[str, Any] | None:
    return None if bisect["status"] in ("confirming", "bisecting") else bisect


def main() -> int:
    """Run the bisect and take the screenshot."""
    shot = Path(sys.argv[1])
    work = Path(tempfile.mkdtemp(prefix="perfdash-bisect-proof-"))
    env = {**os.environ, "PERFDASH_DATA_DIR": str(work / "var"), "PIP_NO_INDEX": "1",
           "PIP_NO_BUILD_ISOLATION": "0", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}  # fmt: skip
    base = f"http://127.0.0.1:{_port()}"
    serve = _spawn(["serve", "--port", base.rsplit(":", 1)[1], "--no-samples"], env, work / "s.log")
    worker = None
    try:
        _until(lambda: httpx.get(f"{base}/healthz").status_code == 200, 90, "perfdash serve")
        token = subprocess.run(
            [sys.executable, "-m", "workers.cli", "token", "create", "--scope", "admin"],
            env=env, cwd=REPO, capture_output=True, check=True, text=True,
        ).stdout.split()[-1]  # fmt: skip
        auth = {"Authorization": f"Bearer {token}"}
        worker = _spawn(["worker", "--queues", "gpu", "--concurrency", "1"], env, work / "w.log")
        hashes = make_repo(work / "repo")
        spec = {
            "name": "slow", "project": "bisect-proof", "kind": "callable", "workload": "slow-step",
            "install": f"git+file://{work / 'repo'}@{{ref}}", "queue": "gpu",
            "params": {"n": 40000, "iters": 8}, "deterministic": "off", "timeout_s": 120,
            "description": "slowpkg busy loop; 2x the rounds from commit 6 on",
        }  # fmt: skip
        httpx.post(f"{base}/api/v1/benchmarks", json=spec, headers=auth).raise_for_status()
        _until(lambda: httpx.get(f"{base}/api/v1/runners?live=true").json()["count"], 120, "runner")
        body = {"good": hashes[0], "bad": hashes[-1], "metric": "step_ms", "repeats": 2,
                "budget": 10}  # fmt: skip
        started = httpx.post(f"{base}/api/v1/benchmarks/slow/bisects", json=body, headers=auth)
        started.raise_for_status()
        path = f"{base}/api/v1/bisects/{started.json()['id']}"
        done = _until(lambda: _ended(httpx.get(path).json()), 600, "the bisect")
        done["expected_first_bad"] = hashes[SLOW_FROM]
        print(json.dumps(done, indent=1))
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium",
                                         args=["--no-sandbox", "--disable-gpu"])  # fmt: skip
            page = browser.new_context(viewport={"width": 1200, "height": 900}).new_page()
            page.goto(f"{base}/benchmarks/slow")
            page.wait_for_selector(".bisect-panel .js-plotly-plot", timeout=30_000)
            page.wait_for_timeout(1500)
            page.locator(".bisect-panel").screenshot(path=str(shot))
            browser.close()
    finally:
        for proc in (worker, serve):
            if proc is not None:
                stop_process_group(proc)
    return 0 if done["first_bad"] == hashes[SLOW_FROM] else 1


if __name__ == "__main__":
    raise SystemExit(main())
