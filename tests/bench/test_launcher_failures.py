"""How a runner ended, as it happened (issue #37): exit code, signal or time limit, each
with the tail of what the runner wrote.

The runner is the real `python -m workers.bench.run` subprocess; what makes it fail is a
`torch` module placed first on its path (the launcher's per-run `site` folder, how an
install hook's packages reach it), the way a runner without torch, or one that the OOM
killer ends, fails on a real host.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from workers.bench.launcher import launch
from workers.bench.spec import RunRequest


def _launch(tmp_path: Path, torch_body: str, timeout_s: int = 60) -> tuple[str | None, str]:
    site = tmp_path / "site"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text(torch_body)
    request = RunRequest(run_id="r1", name="gemm", kind="builtin", workload="gemm",
                         timeout_s=timeout_s)  # fmt: skip
    outcome = launch(request, tmp_path / "work", site=site)
    return outcome.reason, outcome.error or ""


def test_an_exit_without_a_result_is_an_exit_code_with_the_stderr_tail(tmp_path: Path) -> None:
    body = "import sys\nsys.stderr.write('No module named torch (simulated)\\n')\nsys.exit(1)\n"
    reason, error = _launch(tmp_path, body)
    assert reason == "exit_code"
    assert "exited with code 1" in error and "No module named torch (simulated)" in error


def test_a_signal_death_is_killed_with_the_signal_name(tmp_path: Path) -> None:
    body = "import os, signal\nprint('allocating', flush=True)\n"
    body += "os.kill(os.getpid(), signal.SIGKILL)\n"
    reason, error = _launch(tmp_path, body)
    assert reason == "killed" and "SIGKILL" in error and "allocating" in error


@pytest.mark.timeout(60)
def test_a_time_limit_kills_the_group_and_keeps_the_output(tmp_path: Path) -> None:
    body = "import time\nprint('warming up', flush=True)\ntime.sleep(120)\n"
    reason, error = _launch(tmp_path, body, timeout_s=2)
    assert reason == "time_limit" and "2 s time limit" in error and "warming up" in error
