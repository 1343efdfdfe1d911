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


def _git(args: list[str], cwd: Path | None = None) -> str:
    env = {**os.environ, "GIT_ALLOW_PROTOCOL": _PROTOCOLS, "GIT_TERMINAL_PROMPT": "0"}
    try:
        proc = subprocess.run(
            ["git", *args], cwd=cwd, env=env, capture_output=True, timeout=GIT_TIMEOUT_S,
            check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as e:
        raise CommitListError(f"git {args[0]}: {e}") from e
    if proc.returncode != 0:
        tail = proc.stderr.decode(errors="replace")[-800:]
        raise CommitListError(f"git {args[0]} failed: {tail}")
    return proc.stdout.decode()


def mirror(url: str, cache: Path) -> Path:
    """A bare clone of `url` under `cache`, fetched up to date."""
    repo = cache / hashlib.sha256(url.encode()).hexdigest()[:24]
    if (repo / "HEAD").exists():
        _git(["fetch", "--quiet", "--prune", "--tags", "origin",
              "+refs/heads/*:refs/heads/*"], cwd=repo)  # fmt: skip
    else:
        cache.mkdir(parents=True, exist_ok=True)
        _git(["clone", "--quiet", "--bare", "--", url, str(repo)])
    return repo


def commits_between(url: str, good: str, bad: str, cache: Path) -> list[str]:
    """Full hashes of the first-parent commits after `good` up to `bad`, oldest first.

    Raises:
        CommitListError: git failed, a ref is unknown, or bad does not descend from good.
    """
    repo = mirror(url, cache)
    out = _git(["rev-list", "--first-parent", "--reverse", f"--max-count={MAX_COMMITS}",
                f"{good}..{bad}", "--"], cwd=repo).split()  # fmt: skip
    if not out:
        raise CommitListError(f"no commits in {good}..{bad}: bad does not come after good")
    return out
