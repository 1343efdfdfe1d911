"""`list_bisect_commits`: the runner checks a bisect's refs and lists its commits with git
(thin adapter).

It runs on the bisect's pinned runner queue, which reaches the install hook's repository.
Good and bad must be on the spec's allowed branches (`workers.bench.refs`), else the
bisect is refused before any run is queued. A listing failure is not retried: the bisect
falls back to the series' pushed commits.
"""

from __future__ import annotations

import logging
from pathlib import Path

from sqlmodel import Session

from backend.core.config import get_settings
from backend.core.db import get_engine
from backend.core.task_names import LIST_BISECT_COMMITS
from backend.models.benchmarks import BenchmarkSpec
from backend.models.bisects import Bisect
from backend.services.benchmarks import git_url, refuse_bisect, run_branches, store_commits
from workers.bench.commits import CommitListError, commits_between
from workers.bench.refs import RefNotAllowed, allowed_commits
from workers.celery_app import app

log = logging.getLogger(__name__)


def _refused(
    bisect_id: str,
    url: str | None,
    refs: list[str],
    branches: list[str],
    cache: Path,
    approved_by: str | None,
) -> bool:
    """Refuse the bisect (True) if a ref is off the allowed branches, before any run."""
    try:
        allowed_commits(url, refs, branches, cache, approved_by=approved_by)
    except RefNotAllowed as e:
        with Session(get_engine()) as session:
            refuse_bisect(session, bisect_id, str(e))
        return True
    return False


@app.task(name=LIST_BISECT_COMMITS, soft_time_limit=900, time_limit=960)  # type: ignore[untyped-decorator]
def list_bisect_commits(bisect_id: str) -> int:
    """Check good and bad, list good..bad in the hook's repository, store it on the bisect."""
    with Session(get_engine()) as session:
        bisect = session.get(Bisect, bisect_id)
        spec = session.get(BenchmarkSpec, bisect.spec_id) if bisect else None
        if bisect is None or spec is None or bisect.commits:
            return 0
        url, good, bad = git_url(spec.install), bisect.good, bisect.bad
        branches, approved_by = run_branches(spec), bisect.ref_approved_by
    cache = get_settings().data_dir / "git-cache"
    if _refused(bisect_id, url, [good, bad], branches, cache, approved_by):
        return 0
    commits: list[str] | None = None
    error = ""
    try:
        if url is None:
            raise CommitListError("the spec's install hook names no git URL")
        commits = commits_between(url, good, bad, cache)
    except CommitListError as e:
        error = str(e)
    with Session(get_engine()) as session:
        store_commits(session, bisect_id, commits, error)
    return len(commits or [])
