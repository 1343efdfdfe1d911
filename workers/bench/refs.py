"""Whether a run may install the spec's code at a ref: the runner's check, on its mirror.

An install hook (`git+URL@{ref}`) needs an admin, but a ref does not: a run request, a
bisect, a pushed commit name one. GitHub serves `refs/pull/123/head` and every fork's
commits through the parent repository's URL, so "a ref of our repository" is no proof
that anyone trusted chose the code. The runner therefore resolves the ref on its own
mirror (a bare clone that fetches only branches and tags, `workers.bench.commits`) to a
full commit hash and runs it only if one of the spec's allowed branches contains it
(`git merge-base --is-ancestor`). The hash, not the ref, is what pip then installs, so
a branch that moves between the check and the install changes nothing.

An admin may approve a ref off those branches (`ref_approved_by`): it is still checked
as text and resolved when the mirror knows it, but its branches are not asked.

Public surface: `RefNotAllowed`, `allowed_commits`.
"""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase
from pathlib import Path

from backend.core.git_refs import check_ref
from workers.bench.commits import CommitListError, git_says, mirror, run_git


class RefNotAllowed(Exception):
    """The ref is not on an allowed branch (or cannot be checked); the message says why."""


def _resolve(repo: Path, ref: str) -> str | None:
    """The full hash of the commit `ref` names on the mirror, or None if it names none."""
    try:
        out = run_git(["rev-parse", "--verify", "--quiet", "--end-of-options",
                       f"{ref}^{{commit}}"], cwd=repo)  # fmt: skip
    except CommitListError:
        return None
    return out.strip() or None


def _containing_branch(repo: Path, commit: str, patterns: Sequence[str]) -> str | None:
    """The first branch matching a pattern whose history contains `commit`, or None."""
    names = run_git(["for-each-ref", "--format=%(refname:lstrip=2)", "refs/heads/"], cwd=repo)
    for branch in names.split():
        if any(fnmatchcase(branch, p) for p in patterns) and git_says(
            ["merge-base", "--is-ancestor", "--", commit, f"refs/heads/{branch}"], cwd=repo
        ):
            return branch
    return None


def _checked(repo: Path, url: str, ref: str, patterns: Sequence[str]) -> str:
    commit = _resolve(repo, ref)
    if commit is None:
        raise RefNotAllowed(
            f"{ref!r} names no commit of the branches and tags of {url} (a pull request's "
            "ref or a fork's commit is neither); only an admin may run it"
        )
    if _containing_branch(repo, commit, patterns) is None:
        raise RefNotAllowed(
            f"commit {commit} ({ref}) is on none of the allowed branches "
            f"({', '.join(patterns)}) of {url}; only an admin may run it"
        )
    return commit


def allowed_commits(
    url: str | None,
    refs: Sequence[str],
    patterns: Sequence[str],
    cache: Path,
    *,
    approved_by: str | None = None,
) -> list[str]:
    """The full commit hash to install for each of `refs` (one fetch of the mirror), if
    one of the branches matching `patterns` contains it; for refs an admin approved, the
    hash when the mirror knows it, else the ref itself.

    Raises:
        RefNotAllowed: a ref is malformed, the hook names no git URL, the mirror cannot
            be fetched, a ref names no commit of its branches and tags, or no allowed
            branch contains that commit.
    """
    for ref in refs:
        try:
            check_ref(ref)
        except ValueError as e:
            raise RefNotAllowed(f"ref {ref!r}: {e}") from e
    if url is None:
        if approved_by:
            return list(refs)
        raise RefNotAllowed(
            "the install hook names no git URL (`git+URL@{ref}`), so the runner cannot "
            f"check that {', '.join(refs)} is on an allowed branch"
        )
    try:
        repo = mirror(url, cache)
    except CommitListError as e:
        if approved_by:
            return list(refs)
        raise RefNotAllowed(f"the runner could not fetch {url} to check the refs: {e}") from e
    if approved_by:
        return [_resolve(repo, ref) or ref for ref in refs]
    return [_checked(repo, url, ref, patterns) for ref in refs]
