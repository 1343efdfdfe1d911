"""A/A batches that reach their size in usable runs (issue #37).

`--repeat N` queues N runs of one ref (trigger `aa`). A run flagged throttled or
contended, or a failed one, is left out of the noise band, so N queued runs can leave
fewer than N usable ones (on the H200, 11 of 20 short-GEMM runs were flagged and no band
formed). Each time a run of the batch ends, `top_up` queues replacements (trigger
`aa_retry`) until N usable runs exist or could still come from runs in flight, within a
budget of extra runs (`PERFDASH_BENCH_AA_EXTRA_RUNS`). `batch_state` says where a batch
stands, and in words when the budget ran out.

Public surface: `AA_TRIGGERS`, `AaBatch`, `batch_state`, `top_up`.
"""

from dataclasses import dataclass, field
from typing import Any

from sqlmodel import Session, col, select

from backend.models.benchmarks import BenchmarkRun, BenchmarkSpec, RunStatus
from backend.services import outbox
from backend.services.benchmarks.specs import add_run
from backend.services.errors import NotFoundError
from backend.services.series import describe_flags, suspect_flags

AA_TRIGGERS = ("aa", "aa_retry")
_PENDING = (RunStatus.QUEUED, RunStatus.RUNNING)


@dataclass(frozen=True, slots=True)
class AaBatch:
    """One A/A batch: how many usable runs it asked for, has, and may still get."""

    aa_group: str
    target: int  # N of --repeat N
    usable: int  # succeeded and not flagged throttled or contended
    pending: int  # queued or running
    extra: int  # replacement runs queued so far
    budget: int  # replacement runs allowed
    state: str  # "running", "complete", "budget_spent"
    message: str
    runs: list[dict[str, Any]] = field(default_factory=list)  # id, status, usable, why not


def _why_unusable(run: BenchmarkRun) -> str | None:
    if run.status == RunStatus.FAILED:
        return f"failed ({run.reason})"
    flags = suspect_flags(run.environment)
    return f"flagged {describe_flags(flags)}" if flags else None


def batch_state(session: Session, aa_group: str, budget: int) -> AaBatch:
    """Where the batch stands; NotFoundError for an unknown group."""
    runs = session.exec(
        select(BenchmarkRun)
        .where(BenchmarkRun.aa_group == aa_group)
        .order_by(col(BenchmarkRun.created_at), col(BenchmarkRun.id))
    ).all()
    if not aa_group or not runs:
        raise NotFoundError(f"A/A batch {aa_group!r} not found")
    rows = []
    for r in runs:
        why = None if r.status in _PENDING else _why_unusable(r)
        usable = r.status == RunStatus.SUCCEEDED and why is None
        rows.append({"id": r.id, "status": str(r.status), "trigger": r.trigger,
                     "usable": usable, "why": why})  # fmt: skip
    target = sum(1 for r in runs if r.trigger == "aa")
    extra = len(runs) - target
    usable_runs = sum(1 for r in rows if r["usable"])
    pending = sum(1 for r in runs if r.status in _PENDING)
    left = sum(1 for r in rows if r["why"])
    if usable_runs >= target:
        state = "complete"
        message = f"{usable_runs} of {target} usable runs ({len(runs)} runs, {left} left out)"
    elif pending:
        state = "running"
        message = f"{usable_runs} of {target} usable runs so far, {pending} to come"
    else:
        state = "budget_spent"
        message = (
            f"{usable_runs} of {target} usable runs after {len(runs)} runs: {left} left out "
            f"(flagged or failed) and the budget of {budget} extra runs "
            "(PERFDASH_BENCH_AA_EXTRA_RUNS) ran out"
        )
    return AaBatch(aa_group, target, usable_runs, pending, extra, budget, state, message, rows)


def top_up(session: Session, run_id: str, *, budget: int) -> list[BenchmarkRun]:
    """After a run of a batch ended: queue replacements for its unusable runs, if the
    budget allows, so N usable runs can still come. Returns the runs queued."""
    run = session.get(BenchmarkRun, run_id)
    if run is None or not run.aa_group or run.trigger not in AA_TRIGGERS:
        return []
    batch = batch_state(session, run.aa_group, budget)
    short = batch.target - batch.usable - batch.pending
    count = min(short, budget - batch.extra)
    spec = session.get(BenchmarkSpec, run.spec_id)
    if count <= 0 or spec is None:
        return []
    added = [
        add_run(session, spec, trigger="aa_retry", ref=run.ref, aa_group=run.aa_group)
        for _ in range(count)
    ]
    session.commit()
    outbox.send_now(session, [message for _, message in added])
    return [r for r, _ in added]
