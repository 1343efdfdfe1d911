"""Start `python -m workers.bench.run` for one run and say how it ended (no torch here).

The runner is a child process in its own session: a time limit kills its whole group,
and how it ended is recorded as it happened: `killed` for a signal death (the kernel's
OOM killer, a `kill -9`, with the signal's name), `exit_code` for an exit without a
result (an import error, `sys.exit(1)`), `time_limit` for our timeout; each with the tail
of the runner's output (stderr and stdout, interleaved as written). A handled failure the
runner reports itself in `result.json`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workers.bench.environment import allowed_env
from workers.bench.spec import RunRequest

LOG_TAIL = 4000
INSTALL_TIMEOUT_S = 900


@dataclass
class Outcome:
    """A finished runner: its result document, or a failure reason and message."""

    result: dict[str, Any] | None = None
    reason: str | None = None
    error: str | None = None
    trace_path: Path | None = None
    log: str = field(default="", repr=False)


def _tail(path: Path) -> str:
    return path.read_text(errors="replace")[-LOG_TAIL:] if path.exists() else ""


def install_at_ref(
    requirement: str, ref: str, target: Path, env: Mapping[str, str] | None = None
) -> Outcome | None:
    """pip-install the spec's package at `ref` into `target`, with the allow-listed
    environment and the spec's `env`; an Outcome only on failure."""
    spec = requirement.replace("{ref}", ref)
    log = target.parent / "install.log"
    with log.open("wb") as out:
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--no-input", "--target", str(target),
             "--", spec],
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=INSTALL_TIMEOUT_S,
            check=False,
            env=allowed_env(target.parent, env or {}, pip=True),
        )  # fmt: skip
    if proc.returncode == 0:
        return None
    return Outcome(reason="install", error=f"pip install {spec} failed:\n{_tail(log)}")


_COMMIT = re.compile(r"^[0-9a-f]{40}$")
CACHED_INSTALLS = 32


def cached_install(
    requirement: str, ref: str, cache: Path, env: Mapping[str, str] | None = None
) -> tuple[Path, Outcome | None]:
    """The spec's package at `ref`, installed once per full commit hash and reused.

    A 40-hex ref names immutable code, so a bisect's repeated runs at one commit (the A/B
    confirmation runs `repeats` at each end) pay the pip install once. Other refs (a
    branch, a tag) may move, so they are installed afresh into a per-run folder by the
    caller. The install goes to a temporary folder renamed into place, so a crash leaves
    no half-installed entry; the oldest entries past `CACHED_INSTALLS` are removed.
    """
    extra = json.dumps(dict(env), sort_keys=True) if env else ""  # the spec's env may build it
    key = hashlib.sha256(f"{requirement}\0{ref}{extra}".encode()).hexdigest()[:32]
    site = cache / key
    if site.is_dir():
        os.utime(site)
        return site, None
    cache.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=cache))
    failed = install_at_ref(requirement, ref, staging / "site", env)
    if failed is None:
        with contextlib.suppress(OSError):  # another worker won the race: use its copy
            (staging / "site").rename(site)
    shutil.rmtree(staging, ignore_errors=True)
    entries = sorted((p for p in cache.iterdir() if not p.name.startswith(".")),
                     key=lambda p: p.stat().st_mtime)  # fmt: skip
    for old in entries[:-CACHED_INSTALLS]:
        shutil.rmtree(old, ignore_errors=True)
    return site, failed


def is_commit(ref: str) -> bool:
    """Whether `ref` is a full commit hash (immutable, so its install can be cached)."""
    return bool(_COMMIT.match(ref))


def _env(site: Path | None, workdir: Path, spec_env: Mapping[str, str]) -> dict[str, str]:
    env = allowed_env(workdir, spec_env)  # never the worker's secrets
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    return env


def launch(request: RunRequest, workdir: Path, *, site: Path | None = None) -> Outcome:
    """Run the request in a subprocess under its time limit and read what it left."""
    workdir.mkdir(parents=True, exist_ok=True)
    request_path, out_dir, log = workdir / "request.json", workdir / "out", workdir / "runner.log"
    request.write(request_path)
    cmd = [sys.executable, "-m", "workers.bench.run", str(request_path), str(out_dir)]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            cmd,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=_env(site, workdir, request.env),
            start_new_session=True,
        )
        try:
            code = proc.wait(timeout=request.timeout_s)
        except BaseException as e:  # our time limit, or the task's soft limit: no orphan
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            if not isinstance(e, subprocess.TimeoutExpired):
                raise
            tail = _tail(log)
            return Outcome(
                reason="time_limit",
                error=f"the run exceeded its {request.timeout_s} s time limit and its process "
                f"group was killed (SIGKILL); its output ends:\n{tail}",
                log=tail,
            )
    return _read(out_dir, code, _tail(log))


def _signal_name(number: int) -> str:
    """`SIGKILL` for 9; the bare number for one this platform does not name."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _read(out_dir: Path, code: int, log: str) -> Outcome:
    result_path = out_dir / "result.json"
    if code < 0:
        name = _signal_name(-code)
        error = (f"the runner was killed by {name} before reporting (the OOM killer or a "
                 f"kill); its output ends:\n{log}")  # fmt: skip
        return Outcome(reason="killed", error=error, log=log)
    if not result_path.exists():
        error = f"the runner exited with code {code} without a result; its output ends:\n{log}"
        return Outcome(reason="exit_code", error=error, log=log)
    result: dict[str, Any] = json.loads(result_path.read_text())
    if result.get("status") != "succeeded":
        error = str(result.get("error") or "the runner failed")
        return Outcome(result=result, reason=str(result.get("reason") or "error"), error=error)
    trace = result.get("trace_file")
    return Outcome(result=result, trace_path=out_dir / trace if trace else None, log=log)
