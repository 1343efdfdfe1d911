"""Only refs on a spec's allowed branches are installed, and never with the worker's secrets.

A local git repository holds a tiny package (`markpkg`) whose in-tree build backend
(`data/markbackend.py`) writes a marker file, named after the commit's side, with the
environment it was built in; its registered callable writes the benchmark process's
environment. Branch `main` has two commits, `release/1` one more; a pull request's
commit exists only as `refs/pull/1/head` (and a tag).
The run path is the task's own (`execute_run`: claim, check the ref on the runner's
mirror, pip install, runner subprocess, metrics push); Celery is left out. What ran is
read from the marker files the package wrote, not from perfdash.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from fastapi.testclient import TestClient
from sqlalchemy import inspect
from sqlalchemy.engine import Engine
from sqlmodel import Session, SQLModel, select

from backend.core.config import Settings
from backend.core.migrate import alembic_config
from backend.models.benchmarks import (
    BenchmarkRun,
    BenchmarkSpec,
    BenchmarkSpecCreate,
    WorkloadKind,
)
from backend.models.bisects import Bisect, BisectStatus
from backend.models.slas import SlaEvaluation
from backend.services.benchmarks.runners import register_runner
from backend.services.benchmarks.specs import run_branches, upsert_spec
from tests.factories import post_metrics, post_sla, token_headers
from workers.bench.environment import allowed_env
from workers.bench.refs import RefNotAllowed, allowed_commits
from workers.tasks.benchmarks import execute_run
from workers.tasks.bisect import list_bisect_commits

# The runner subprocess imports torch; the refusals never get that far.
needs_torch = pytest.mark.skipif(find_spec("torch") is None, reason="torch is not installed")
RUNNER = "celery@gpu-test"
PYPROJECT = """[build-system]
requires = []
build-backend = "markbackend"
backend-path = ["."]

[project]
name = "markpkg"
version = "0.1.0"
"""
BACKEND = Path(__file__).resolve().parent / "data" / "markbackend.py"
BENCH = """import json, os, pathlib


def dump(params, seed, device):
    pathlib.Path({out!r}).write_text(json.dumps(dict(os.environ)))
    return [{{"metric": "one", "unit": "ms", "samples": [1.0, 1.0]}}]
"""


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}  # fmt: skip
    done = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, check=True)
    return done.stdout.decode().strip()


def _commit(repo: Path, side: str, marks: Path, message: str) -> str:
    (repo / "MARKER").write_text(str(marks / f"built-{side}.json"))
    (repo / "CHANGES").write_text(message + "\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


def make_repo(repo: Path, marks: Path) -> dict[str, str]:
    """main (two commits), release/1 off main, and a pull request's commit reachable only
    from refs/pull/1/head and tag `pr-tag`. Returns the commits by name."""
    (repo / "markpkg").mkdir(parents=True)
    (repo / "pyproject.toml").write_text(PYPROJECT)
    (repo / "markbackend.py").write_text(BACKEND.read_text())
    (repo / "markpkg" / "__init__.py").write_text("")
    (repo / "markpkg" / "bench.py").write_text(BENCH.format(out=str(marks / "bench-env.json")))
    _git(repo, "init", "-q", "-b", "main")
    first = _commit(repo, "main", marks, "main 1")
    main = _commit(repo, "main", marks, "main 2")
    _git(repo, "checkout", "-q", "-b", "release/1")
    release = _commit(repo, "release", marks, "release 1")
    _git(repo, "checkout", "-q", "-b", "pr", "main")
    side = _commit(repo, "side", marks, "a stranger's pull request")
    _git(repo, "update-ref", "refs/pull/1/head", side)
    _git(repo, "tag", "pr-tag", side)
    _git(repo, "checkout", "-q", "main")
    _git(repo, "branch", "-q", "-D", "pr")
    return {"first": first, "main": main, "release": release, "side": side}


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    marks = tmp_path / "marks"
    marks.mkdir()
    return tmp_path / "repo", marks, make_repo(tmp_path / "repo", marks)


@pytest.fixture
def mark_spec(
    repo: tuple[Path, Path, dict[str, str]], engine: Engine
) -> tuple[Path, Path, dict[str, str]]:
    """The repository with spec `mark` installing it (callable `env-dump`, an `env`)."""
    with Session(engine) as session:
        _spec(session, repo[0])
    return repo


@pytest.fixture
def live_runner(
    mark_spec: tuple[Path, Path, dict[str, str]], engine: Engine
) -> tuple[Path, Path, dict[str, str]]:
    """Spec `mark` and a live runner on its queue (a bisect pins one)."""
    with Session(engine) as session:
        register_runner(session, name=RUNNER, hostname="gpu", queues=["gpu"], capabilities={})
    return mark_spec


@pytest.fixture
def hermetic_pip(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """pip builds with the installed setuptools and no index (the bisect worker test's
    settings), and the worker holds a secret that must not travel."""
    monkeypatch.setenv("PIP_NO_BUILD_ISOLATION", "0")
    monkeypatch.setenv("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PERFDASH_TEST_SECRET", "do-not-leak")
    monkeypatch.setenv("UPSTREAM_API_TOKEN", "do-not-leak")
    yield


def _spec(session: Session, repo: Path, **extra: Any) -> None:
    upsert_spec(
        session,
        BenchmarkSpecCreate(
            name="mark", project="p", kind=WorkloadKind.CALLABLE, workload="env-dump",
            install=f"git+file://{repo}@{{ref}}", deterministic="off", warmup=0, iters=1,
            timeout_s=120, env={"SPEC_KNOB": "7"}, **extra,
        ),
    )  # fmt: skip


def _leaks(env: dict[str, str]) -> list[str]:
    return [k for k in env if k.startswith("PERFDASH_") or "TOKEN" in k]


# (ref, patterns, allowed) on the mirror; a commit by name is looked up in the repo.
CASES: list[tuple[str, list[str], bool]] = [
    ("main", ["main"], True), ("@first", ["main"], True), ("main~1", ["main"], True),
    ("@release", ["main"], False), ("@release", ["release/*"], True),
    ("release/1", ["main", "release/*"], True), ("@side", ["main", "release/*"], False),
    ("refs/pull/1/head", ["*"], False), ("pr-tag", ["*"], False),
    ("--upload-pack=touch x", ["main"], False), ("no-such-branch", ["main"], False),
]  # fmt: skip


@pytest.mark.parametrize(("ref", "patterns", "allowed"), CASES)
def test_the_runner_allows_only_commits_of_the_allowed_branches(
    repo: tuple[Path, Path, dict[str, str]], tmp_path: Path, ref: str, patterns: list[str],
    allowed: bool,
) -> None:  # fmt: skip
    path, _, commits = repo
    ref = commits[ref[1:]] if ref.startswith("@") else ref
    url, cache = f"file://{path}", tmp_path / "cache"
    if not allowed:
        with pytest.raises(RefNotAllowed):
            allowed_commits(url, [ref], patterns, cache)
        return
    expected = _git(path, "rev-parse", f"{ref}^{{commit}}")
    assert allowed_commits(url, [ref], patterns, cache) == [expected]


@pytest.mark.parametrize("ref", ["refs/pull/1/head", "side"])
def test_a_run_at_a_pull_requests_ref_fails_before_anything_is_installed(
    client: TestClient, mark_spec: tuple[Path, Path, dict[str, str]], hermetic_pip: None,
    ref: str,
) -> None:  # fmt: skip
    _, marks, commits = mark_spec
    ref = commits.get(ref, ref)
    queued = client.post("/api/v1/benchmarks/mark/runs", json={"ref": ref})
    assert queued.status_code == 202, queued.text
    assert execute_run(queued.json()["id"], RUNNER) == "failed"
    run = client.get(f"/api/v1/benchmark-runs/{queued.json()['id']}").json()
    assert run["reason"] == "ref_not_allowed" and "only an admin may run it" in run["error"]
    assert run["ref_approved_by"] is None
    assert list(marks.iterdir()) == []  # no build backend ran, no benchmark


def _run_at(
    client: TestClient, body: dict[str, Any], headers: dict[str, str] | None = None
) -> dict[str, Any]:
    """Queue a run through the API, execute it as the runner's task does, read it back."""
    queued = client.post("/api/v1/benchmarks/mark/runs", json=body, headers=headers)
    assert queued.status_code == 202, queued.text
    execute_run(queued.json()["id"], RUNNER)
    answer: dict[str, Any] = client.get(f"/api/v1/benchmark-runs/{queued.json()['id']}").json()
    return answer


def test_a_commit_on_the_branch_is_installed_as_checked_without_the_workers_secrets(
    client: TestClient, settings: Settings, mark_spec: tuple[Path, Path, dict[str, str]],
    hermetic_pip: None,
) -> None:  # fmt: skip
    _, marks, commits = mark_spec
    run = _run_at(client, {"ref": "main"})
    assert run["reason"] != "ref_not_allowed", run  # without torch the runner then dies
    print(run)
    built = json.loads((marks / "built-main.json").read_text())
    assert not (marks / "built-side.json").exists()
    assert "PERFDASH_TEST_SECRET" in os.environ  # the worker had them; pip's build did not
    assert _leaks(built) == [] and built["SPEC_KNOB"] == "7", built
    # HOME is the install's own folder, and pip kept its settings.
    assert Path(built["HOME"]).is_relative_to(settings.data_dir / "install-cache")
    assert "PIP_NO_INDEX" in built
    # pip installed the commit the runner checked (pip's own record of what it fetched).
    (record,) = (settings.data_dir / "install-cache").glob("*/markpkg-*.dist-info/direct_url.json")
    assert json.loads(record.read_text())["vcs_info"]["commit_id"] == commits["main"]


@needs_torch
def test_the_benchmark_process_gets_no_perfdash_variable(
    client: TestClient, mark_spec: tuple[Path, Path, dict[str, str]], hermetic_pip: None
) -> None:
    _, marks, _ = mark_spec
    run = _run_at(client, {"ref": "main"})
    assert run["status"] == "succeeded", run
    bench = json.loads((marks / "bench-env.json").read_text())
    assert _leaks(bench) == [] and bench["SPEC_KNOB"] == "7", bench
    assert "perfdash-bench-" in bench["HOME"] and not [k for k in bench if k.startswith("PIP_")]


def test_only_an_admin_may_run_another_ref_and_the_run_says_who(
    client: TestClient, engine: Engine, mark_spec: tuple[Path, Path, dict[str, str]],
    hermetic_pip: None,
) -> None:  # fmt: skip
    _, marks, _ = mark_spec
    body = {"ref": "refs/pull/1/head", "allow_any_ref": True}
    url = "/api/v1/benchmarks/mark/runs"
    assert client.post(url, json=body).status_code == 401
    as_ci = client.post(url, json=body, headers=token_headers(engine, "bench:run", name="ci"))
    assert as_ci.status_code == 403 and "admin" in as_ci.text
    run = _run_at(client, body, token_headers(engine, "admin", name="lead"))
    assert run["ref_approved_by"].startswith("token 'lead") and run["reason"] != "ref_not_allowed"
    assert (marks / "built-side.json").exists()  # the side commit's backend does write it


def test_a_pushed_commit_from_a_pull_request_starts_no_bisect(
    client: TestClient, engine: Engine, live_runner: tuple[Path, Path, dict[str, str]],
    hermetic_pip: None,
) -> None:  # fmt: skip
    _, marks, commits = live_runner
    lead, ci = token_headers(engine, "admin", name="lead"), token_headers(engine, "metrics:write")
    post_sla(client, lead, name="mark-speed", project="p", benchmark="mark", metric="step_ms",
             rule="regression", tolerance_pct=5.0)  # fmt: skip
    # main's commits, then the pull request's commit, 2x slower: a regression to bisect.
    series = [commits["first"], commits["main"]] * 2 + [commits["side"]]
    start = datetime.now(UTC) - timedelta(minutes=5)
    for i, (commit, ms) in enumerate(zip(series, [10.0] * 4 + [20.0], strict=True)):
        samples = [ms * (1 + 0.001 * j) for j in range(8)]
        answer = post_metrics(
            client,
            ci,
            project="p",
            benchmark="mark",
            commit=commit,
            run_id=f"ci-{i}",
            timestamp=(start + timedelta(minutes=i)).isoformat(),
            environment={},
            points=[{"metric": "step_ms", "unit": "ms", "samples": samples}],
        )
    assert answer["verdicts"][0]["details"]["bisect"]["status"] == "checking"
    with Session(engine) as session:
        bisect_id = session.exec(select(Bisect)).one().id
    list_bisect_commits(bisect_id)  # the runner's check, as the task runs it
    with Session(engine) as session:
        bisect = session.get(Bisect, bisect_id)
        assert bisect is not None and bisect.status == BisectStatus.FAILED
        assert bisect.error is not None and bisect.error.startswith("ref_not_allowed")
        assert commits["side"] in bisect.error and bisect.runs == {}
        assert session.exec(select(BenchmarkRun)).first() is None
        evaluation = session.exec(
            select(SlaEvaluation).where(SlaEvaluation.commit == commits["side"])
        ).one()
    note = evaluation.details["bisect"]
    assert note["status"] == "not_started" and "on none of the allowed branches" in note["reason"]
    assert list(marks.iterdir()) == []


def test_0022_gives_older_specs_their_branch_and_no_env_and_downgrades(
    engine: Engine, settings: Settings, tmp_path: Path
) -> None:
    with Session(engine) as session:
        _spec(session, tmp_path)
    config = alembic_config(settings.resolved_database_url)
    command.downgrade(config, "0021")
    engine.dispose()
    assert "allowed_branches" not in {
        c["name"] for c in inspect(engine).get_columns("benchmark_specs")
    }
    command.upgrade(config, "head")
    engine.dispose()
    with Session(engine) as session:
        spec = session.exec(select(BenchmarkSpec)).one()
        assert (spec.allowed_branches, spec.env, run_branches(spec)) == ([], {}, ["main"])
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        assert compare_metadata(context, SQLModel.metadata) == []


@pytest.mark.parametrize("admin", [False, True])
def test_a_bisect_at_a_pull_requests_commit_needs_an_admin(
    client: TestClient, engine: Engine, live_runner: tuple[Path, Path, dict[str, str]],
    admin: bool,
) -> None:  # fmt: skip
    _, marks, commits = live_runner
    body = {"good": commits["main"], "bad": commits["side"], "metric": "step_ms"}
    url = "/api/v1/benchmarks/mark/bisects"
    assert client.post(url, json={**body, "allow_any_ref": True}).status_code == 401
    headers = token_headers(engine, "admin", name="lead") if admin else {}
    started = client.post(url, json={**body, "allow_any_ref": admin}, headers=headers)
    assert started.status_code == 202, started.text
    list_bisect_commits(started.json()["id"])
    bisect = client.get(f"/api/v1/bisects/{started.json()['id']}").json()
    with Session(engine) as session:
        runs = session.exec(select(BenchmarkRun)).all()
    if admin:  # checked as text only, listed, and its runs queued with the approval
        assert bisect["status"] == "confirming" and bisect["commits"][-1] == commits["side"]
        assert bisect["ref_approved_by"].startswith("token 'lead")
        assert runs and {r.ref_approved_by for r in runs} == {bisect["ref_approved_by"]}
    else:
        assert bisect["status"] == "failed" and "ref_not_allowed" in bisect["error"]
        assert runs == [] and bisect["ref_approved_by"] is None
    assert list(marks.iterdir()) == []  # no run executed here either way


@pytest.mark.parametrize("ref", ["--upload-pack=touch x", "main..side", "a b", "main@{1}"])
def test_a_ref_that_git_would_read_as_more_than_a_revision_is_refused_by_the_api(
    client: TestClient, mark_spec: tuple[Path, Path, dict[str, str]], ref: str
) -> None:
    answer = client.post("/api/v1/benchmarks/mark/runs", json={"ref": ref})
    assert answer.status_code == 422 and "a git ref" in answer.text, answer.text


WORKER_ENV = {
    "PATH": "/usr/bin", "LANG": "C.UTF-8", "CUDA_VISIBLE_DEVICES": "0", "NCCL_DEBUG": "WARN",
    "HIP_VISIBLE_DEVICES": "0", "PIP_INDEX_URL": "https://index", "PERFDASH_DATABASE_URL": "pg",
    "PERFDASH_BROKER_URL": "redis://", "CUDA_UPLOAD_TOKEN": "t", "AWS_ACCESS_KEY_ID": "a",
    "GITHUB_TOKEN": "g", "DATABASE_URL": "pg", "CELERY_BROKER_URL": "r", "HOME": "/root",
    "SSH_AUTH_SOCK": "/tmp/agent", "LD_PRELOAD": "/evil.so",
}  # fmt: skip


@pytest.mark.parametrize("pip", [False, True])
def test_the_allow_list_keeps_gpu_variables_and_drops_secrets(tmp_path: Path, pip: bool) -> None:
    env = allowed_env(tmp_path, {"OMP_NUM_THREADS": "4"}, pip=pip, source=WORKER_ENV)
    kept = {"PATH", "LANG", "CUDA_VISIBLE_DEVICES", "NCCL_DEBUG", "HIP_VISIBLE_DEVICES"}
    assert set(env) == kept | {"HOME", "OMP_NUM_THREADS"} | ({"PIP_INDEX_URL"} if pip else set())
    assert env["HOME"] == str(tmp_path / "home") and (tmp_path / "home").is_dir()


@pytest.mark.parametrize(
    ("field", "value"), [("env", {"LD_PRELOAD": "/tmp/x.so"}), ("allowed_branches", ["*"])]
)
def test_a_spec_env_needs_an_admin_and_branch_patterns_are_checked(
    client: TestClient, engine: Engine, field: str, value: object
) -> None:
    spec = {"name": "g", "workload": "gemm", field: value}
    writer = token_headers(engine, "benchmarks:write", name="writer")
    answer = client.post("/api/v1/benchmarks", json=spec, headers=writer)
    # A spec env can load code (LD_PRELOAD); allowed branches without a hook change nothing.
    assert answer.status_code == (403 if field == "env" else 200), answer.text
    lead = token_headers(engine, "admin", name="lead")
    assert client.post("/api/v1/benchmarks", json=spec, headers=lead).status_code == 200
    bad = {**spec, "env": {"PERFDASH_DATABASE_URL": "x"}, "allowed_branches": ["-x", "a..b"]}
    refused = client.post("/api/v1/benchmarks", json=bad, headers=lead)
    assert refused.status_code == 422 and "PERFDASH_" in refused.text, refused.text
    assert "is not a branch pattern" in refused.text
