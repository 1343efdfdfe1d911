"""List the commits between two refs of an install hook's repository, on the runner.

A bisect needs the commits between its good and bad refs in order. The runner already
reaches the repository (it pip-installs from it), so it keeps a bare clone per URL in a
cache folder, fetches, and asks `git rev-list --first-parent --reverse good..bad`: the
first-parent chain is the order the branch moved in, and merged side branches are
measured as the merge commit that brought them in. No torch here.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

GIT_TIMEOUT_S = 300
MAX_COMMITS = 100_000
# Transports git may use: no `ext::` (runs a command) and no `fd::`.
_PROTOCOLS = "file:git:http:https:ssh"


class CommitListError(Exception):
    """git could not list the commits; the message has its output."""


def _run(args: list[str], cwd: Path | None) -> subprocess.CompletedProcess[bytes]:
    # The worker's own git (its credentials reach the repository); no command transports.
    env = {**os.environ, "GIT_ALLOW_PROTOCOL": _PROTOCOLS, "GIT_TERMINAL_PROMPT": "0"}
    try:
        return subprocess.run(
            ["git", *args], cwd=cwd, env=env, capture_output=True, timeout=GIT_TIMEOUT_S,
            check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as e:
        raise CommitListError(f"git {args[0]}: {e}") from e


def _failed(args: list[str], proc: subprocess.CompletedProcess[bytes]) -> CommitListError:
    tail = proc.stderr.decode(errors="replace")[-800:]
    return CommitListError(f"git {args[0]} failed: {tail}")


def run_git(args: list[str], cwd: Path | None = None) -> str:
    """git's standard output; CommitListError with its stderr when it fails."""
    proc = _run(args, cwd)
    if proc.returncode != 0:
        raise _failed(args, proc)
    return proc.stdout.decode()


def git_says(args: list[str], cwd: Path | None = None) -> bool:
    """The yes (exit 0) or no (exit 1) of a git question such as `merge-base
    --is-ancestor`; CommitListError for anything else."""
    proc = _run(args, cwd)
    if proc.returncode not in (0, 1):
        raise _failed(args, proc)
    return proc.returncode == 0


def mirror(url: str, cache: Path) -> Path:
    """A bare clone of `url` under `cache`, fetched up to date."""
    repo = cache / hashlib.sha256(url.encode()).hexdigest()[:24]
    if (repo / "HEAD").exists():
        run_git(["fetch", "--quiet", "--prune", "--tags", "origin",
              "+refs/heads/*:refs/heads/*"], cwd=repo)  # fmt: skip
    else:
        cache.mkdir(parents=True, exist_ok=True)
        run_git(["clone", "--quiet", "--bare", "--", url, str(repo)])
    return repo


def commits_between(url: str, good: str, bad: str, cache: Path) -> list[str]:
    """Full hashes of the first-parent commits after `good` up to `bad`, oldest first.

    Raises:
        CommitListError: git failed, a ref is unknown, or bad does not descend from good.
    """
    repo = mirror(url, cache)
    out = run_git(["rev-list", "--first-parent", "--reverse", f"--max-count={MAX_COMMITS}",
                f"{good}..{bad}", "--"], cwd=repo).split()  # fmt: skip
    if not out:
        raise CommitListError(f"no commits in {good}..{bad}: bad does not come after good")
    return out
