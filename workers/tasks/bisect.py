"""`list_bisect_commits`: the runner lists a bisect's commits with git (thin adapter).

It runs on the bisect's pinned runner queue, which reaches the install hook's repository.
A failure is not retried: the bisect falls back to the series' pushed commits.
"""

from __future__ import annotations

import logging

from sqlmodel import Session

from backend.core.config import get_settings
from backend.core.db import get_engine
from backend.core.task_names import LIST_BISECT_COMMITS
from backend.models.benchmarks import BenchmarkSpec
from backend.models.bisects import Bisect
from backend.services.benchmarks import git_url, store_commits
from workers.bench.commits import CommitListError, commits_between
from workers.celery_app import app

log = logging.getLogger(__name__)


@app.task(name=LIST_BISECT_COMMITS, soft_time_limit=900, time_limit=960)  # type: ignore[untyped-decorator]
def list_bisect_commits(bisect_id: str) -> int:
    """List good..bad in the hook's repository and store it on the bisect."""
    with Session(get_engine()) as session:
        bisect = session.get(Bisect, bisect_id)
        spec = session.get(BenchmarkSpec, bisect.spec_id) if bisect else None
        if bisect is None or spec is None or bisect.commits:
            return 0
        url, good, bad = git_url(spec.install), bisect.good, bisect.bad
    commits: list[str] | None = None
    error = ""
    try:
        if url is None:
            raise CommitListError("the spec's install hook names no git URL")
        commits = commits_between(url, good, bad, get_settings().data_dir / "git-cache")
    except CommitListError as e:
        error = str(e)
    with Session(get_engine()) as session:
        store_commits(session, bisect_id, commits, error)
    return len(commits or [])
