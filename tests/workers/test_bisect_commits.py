"""`git rev-list` on the runner for a bisect: order, first parent, refusals.

The expected lists come from the hashes git printed while the repository was built here.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from workers.bench.commits import CommitListError, commits_between

ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
       "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}  # fmt: skip


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, env=ENV, capture_output=True, check=True)
    return done.stdout.decode().strip()


def _commit(repo: Path, text: str) -> str:
    (repo / "f").write_text(text)
    _git(repo, "add", "f")
    _git(repo, "commit", "-q", "-m", text)
    return _git(repo, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], str]:
    """main: c0 c1 c2, a side branch s1 merged as m, then c4. Returns (repo, main, s1)."""
    path = tmp_path_factory.mktemp("repo")
    _git(path, "init", "-q", "-b", "main")
    main = [_commit(path, f"c{i}") for i in range(3)]
    _git(path, "checkout", "-q", "-b", "side")
    side = _commit(path, "s1")
    _git(path, "checkout", "-q", "main")
    (path / "g").write_text("g")
    _git(path, "add", "g")
    _git(path, "commit", "-q", "-m", "c3")
    main.append(_git(path, "rev-parse", "HEAD"))
    _git(path, "merge", "-q", "--no-ff", "-m", "m", "side")
    main.append(_git(path, "rev-parse", "HEAD"))
    main.append(_commit(path, "c5"))
    return path, main, side


def test_first_parent_commits_oldest_first(
    repo: tuple[Path, list[str], str], tmp_path: Path
) -> None:
    path, main, side = repo
    listed = commits_between(f"file://{path}", main[0], main[-1], tmp_path / "cache")
    assert listed == main[1:] and side not in listed
    # A second call fetches into the same cache; short refs resolve too.
    again = commits_between(f"file://{path}", main[2][:10], "main", tmp_path / "cache")
    assert again == main[3:]
    assert len(list((tmp_path / "cache").iterdir())) == 1


@pytest.mark.parametrize(
    ("url", "good", "bad", "message"),
    [("REPO", "LAST", "FIRST", "bad does not come after good"),
     ("REPO", "0" * 40, "main", "rev-list failed"),
     ("ext::sh -c touch% /tmp/pwned", "a", "b", "clone failed"),
     ("file:///nonexistent/repo", "a", "b", "clone failed")],
)  # fmt: skip
def test_refusals(
    repo: tuple[Path, list[str], str], tmp_path: Path, url: str, good: str, bad: str, message: str
) -> None:
    path, main, _ = repo
    url = url.replace("REPO", f"file://{path}")
    good, bad = (main[-1] if x == "LAST" else main[0] if x == "FIRST" else x for x in (good, bad))
    with pytest.raises(CommitListError, match=message):
        commits_between(url, good, bad, tmp_path / "cache")
    assert not Path("/tmp/pwned").exists()
