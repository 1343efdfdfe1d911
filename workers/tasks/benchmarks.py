"""`run_benchmark` and `bench_tick`: thin adapters from ids to the benchmark runner.

The task never imports torch: the measurement runs in a `python -m workers.bench.run`
subprocess (see `workers.bench.launcher`), so ingest workers that load this module stay
torch-free and a crashing workload cannot take the worker down. Results go through the
metrics push and the trace through the upload path (`backend.services.benchmarks.runs`).
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from celery.exceptions import SoftTimeLimitExceeded
from sqlalchemy.exc import OperationalError
from sqlmodel import Session

from backend.core.config import get_settings
from backend.core.db import get_engine
from backend.core.task_names import BENCH_TICK, RUN_BENCHMARK
from backend.models.benchmarks import BenchmarkRun, BenchmarkSpec
from backend.services.benchmarks import (
    AA_TRIGGERS,
    FailureReason,
    advance_for_run,
    check_storage_paths,
    claim_run,
    enqueue_due_runs,
    fail_run,
    finish_run,
    git_url,
    requeue_run,
    run_branches,
    top_up,
)
from backend.services.errors import InvalidInputError
from backend.services.traces import accept_upload
from workers import runner_registry  # noqa: F401  (connects the worker_ready signal)
from workers.bench.launcher import Outcome, cached_install, install_at_ref, is_commit, launch
from workers.bench.refs import RefNotAllowed, allowed_commits
from workers.bench.spec import Determinism, Kind, RunRequest
from workers.celery_app import app

log = logging.getLogger(__name__)
MAX_RETRIES = 3
# A/A runs: no wait for an idle GPU (the batch's own runs keep it warm), then the steady
# stage of `settle` (1 s windows of clock and power means, at most 10 s).
AA_SETTLE: dict[str, float] = {"idle_timeout_s": 0.0, "steady_timeout_s": 10.0}


def _request(run: BenchmarkRun, spec: BenchmarkSpec) -> RunRequest:
    """The runner's request; A/A runs without a `settle` of their own warm up until clocks
    and power are steady (`AA_SETTLE`), so the batch measures one state of the GPU."""
    settings = get_settings()
    return RunRequest(
        run_id=run.id,
        name=spec.name,
        kind=cast(Kind, str(spec.kind)),
        workload=spec.workload,
        params=spec.params,
        sweep=spec.sweep,
        command=spec.command,
        output_file=spec.output_file,
        seed=spec.seed,
        warmup=spec.warmup,
        iters=spec.iters,
        profile=spec.profile,
        deterministic=cast(Determinism, spec.deterministic),
        spec_hash=spec.spec_hash,
        timeout_s=spec.timeout_s,
        settle=spec.settle
        if spec.settle is not None or run.trigger not in AA_TRIGGERS
        else AA_SETTLE,
        min_clock_fraction=settings.bench_min_clock_fraction,
        throttle_min_samples=settings.bench_throttle_min_samples,
        throttle_min_share=settings.bench_throttle_min_share,
        env=dict(spec.env),
    )


@dataclass(frozen=True)
class _Install:
    """What to install for a run: the spec's hook at the run's ref, and who may say so."""

    hook: str | None
    ref: str
    branches: list[str]
    approved_by: str | None


def _install_of(run: BenchmarkRun, spec: BenchmarkSpec) -> _Install:
    return _Install(spec.install, run.ref, run_branches(spec), run.ref_approved_by)


def _measure(request: RunRequest, workdir: Path, install: _Install) -> Outcome:
    site, failed, data_dir = None, None, get_settings().data_dir
    if install.hook and install.ref:
        url, cache = git_url(install.hook), data_dir / "git-cache"
        try:  # before anything of the ref's is installed, let alone run
            (ref,) = allowed_commits(
                url, [install.ref], install.branches, cache, approved_by=install.approved_by
            )
        except RefNotAllowed as e:
            return Outcome(reason=FailureReason.REF_NOT_ALLOWED.value, error=str(e))
        if is_commit(ref):
            site, failed = cached_install(
                install.hook, ref, data_dir / "install-cache", request.env
            )
        else:  # a ref an admin approved that the mirror does not know
            site = workdir / "site"
            failed = install_at_ref(install.hook, ref, site, request.env)
    if failed is not None:
        return failed
    return launch(request, workdir, site=site)


def _record(session: Session, run_id: str, name: str, project: str, outcome: Outcome) -> str:
    if outcome.reason is not None or outcome.result is None:
        fail_run(session, run_id, FailureReason(outcome.reason or "error"), outcome.error or "")
        return "failed"
    trace_id = None
    if outcome.trace_path is not None:
        with outcome.trace_path.open("rb") as stream:
            trace, _ = accept_upload(
                session=session,
                settings=get_settings(),
                stream=stream,
                name=f"benchmark {name} run {run_id[:8]}.pt.trace.json.gz",
                project=project,
            )
        trace_id = trace.id
    return str(finish_run(session, run_id, outcome.result, trace_id).status)


def execute_run(run_id: str, runner: str) -> str | None:
    """Claim the run, measure it in a subprocess, and record the outcome."""
    with Session(get_engine()) as session:
        claimed = claim_run(session, run_id, runner)
        if claimed is None:  # done, or failed as `killed` (a redelivery): a bisect moves on
            advance_for_run(session, run_id)
            top_up(session, run_id, budget=get_settings().bench_aa_extra_runs)
            return None
        run, spec = claimed
        try:  # specs stored before the check existed are refused here too
            check_storage_paths(spec, get_settings())
        except InvalidInputError as e:
            fail_run(session, run_id, FailureReason.ERROR, str(e))
            advance_for_run(session, run_id)
            return "failed"
        request, install = _request(run, spec), _install_of(run, spec)
        name, project = spec.name, spec.project
    workdir = Path(tempfile.mkdtemp(prefix=f"perfdash-bench-{run_id[:8]}-"))
    try:
        outcome = _measure(request, workdir, install)
        with Session(get_engine()) as session:
            status = _record(session, run_id, name, project, outcome)
            advance_for_run(session, run_id)
            top_up(session, run_id, budget=get_settings().bench_aa_extra_runs)
            return status
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _fail(run_id: str, reason: FailureReason, error: str) -> None:
    with Session(get_engine()) as session:
        fail_run(session, run_id, reason, error)
        advance_for_run(session, run_id)
        top_up(session, run_id, budget=get_settings().bench_aa_extra_runs)


@app.task(  # type: ignore[untyped-decorator]
    name=RUN_BENCHMARK, bind=True, max_retries=MAX_RETRIES, soft_time_limit=3700, time_limit=3800
)
def run_benchmark(self: Any, run_id: str) -> str | None:
    """Run one benchmark; only a database outage (transient) is retried."""
    try:
        return execute_run(run_id, runner=self.request.hostname or "worker")
    except SoftTimeLimitExceeded:
        _fail(run_id, FailureReason.TIME_LIMIT, "the task's time limit passed")
        return "failed"
    except OperationalError as e:
        log.warning("database error during benchmark run %s; retrying: %s", run_id, e)
        with Session(get_engine()) as session:
            requeue_run(session, run_id)
        raise self.retry(exc=e, countdown=5 * 2**self.request.retries) from e
    except Exception as e:
        log.exception("benchmark run %s failed unexpectedly", run_id)
        _fail(run_id, FailureReason.ERROR, f"internal error: {type(e).__name__}: {e}")
        raise


@app.task(name=BENCH_TICK)  # type: ignore[untyped-decorator]
def bench_tick() -> list[str]:
    """Queue the scheduled specs whose cron fired since the last tick."""
    with Session(get_engine()) as session:
        return enqueue_due_runs(session)
