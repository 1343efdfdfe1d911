"""Confirm a regression between two commits on one runner, then bisect to its commit.

A bisect is a row (`backend.models.bisects.Bisect`) advanced by `advance` whenever one
of its runs ends (the `run_benchmark` task calls `advance_for_run`) or the runner has
listed the commits (`store_commits`). No run is queued before that: the runner first
checks that good and bad are on the spec's allowed branches (`workers.bench.refs`), and
a bisect whose refs it refuses ends `failed` with the reason (`refuse_bisect`).
`advance` reads the runs, asks the pure state machine (`bisect_plan.decide`) what next,
and writes the plan, the new runs and their outbox messages in one transaction guarded
by the row's `version`: two completions that race advance it once. Every run goes to
the pinned runner's own queue (`runner_queue`), so good, bad and every probe are
measured on the same machine.

Public surface: `start_bisect`, `advance`, `advance_for_run`, `store_commits`,
`refuse_bisect`, `series_commits`, `pushed_commits`, `git_url`, `run_values`.
"""

import logging
import uuid
from typing import Any

from sqlalchemy import update
from sqlmodel import Session, col, select

from backend.core.clock import utc_now
from backend.core.task_names import LIST_BISECT_COMMITS, runner_queue
from backend.models.benchmarks import BenchmarkRun, BenchmarkSpec, RunStatus
from backend.models.bisects import OPEN_STATUSES, Bisect, BisectCreate, BisectStatus
from backend.models.metrics import MetricRun
from backend.models.outbox import OutboxMessage
from backend.services import outbox
from backend.services.benchmarks.bisect_plan import Measured, Plan, State, decide
from backend.services.benchmarks.bisect_report import benchmark_name, bisect_event
from backend.services.benchmarks.bisect_verdict import note_verdict
from backend.services.benchmarks.runners import list_runners
from backend.services.benchmarks.specs import add_run, get_spec
from backend.services.errors import InvalidInputError
from backend.services.slas import record_event

log = logging.getLogger(__name__)
_MAX_ROUNDS = 5  # optimistic-lock retries of one advance


def git_url(install: str | None) -> str | None:
    """The repository URL of an install hook `...git+URL@{ref}...`, or None.

    >>> git_url("mypkg @ git+https://github.com/org/model@{ref}#egg=mypkg")
    'https://github.com/org/model'
    """
    if not install or "{ref}" not in install:
        return None
    start, end = install.find("git+"), install.find("@{ref}")
    return install[start + 4 : end] if 0 <= start < end else None


def _pick_runner(session: Session, queue: str) -> str:
    live = [r for r in list_runners(session, live_only=True) if queue in r.queues]
    if not live:
        raise InvalidInputError(
            f"no live runner consumes queue {queue!r}: a bisect pins all its runs to one runner"
        )
    return live[0].name


def start_bisect(
    session: Session,
    name: str,
    data: BisectCreate,
    *,
    trigger: str = "api",
    sla_id: str | None = None,
    lower_is_better: bool | None = None,
    ref_approved_by: str | None = None,
) -> Bisect:
    """Create a bisect of spec `name`, pin it to a live runner and ask that runner to check
    its refs and list its commits; the first runs are queued once it has
    (`store_commits`). `ref_approved_by` names the admin who let its refs be off the
    spec's allowed branches (checked by the caller).

    Raises:
        NotFoundError: no such spec.
        InvalidInputError: the spec cannot run at a commit, the budget cannot pay for the
            confirmation, no live runner, or a bisect of this metric is already open.
    """
    spec = get_spec(session, name)
    _check_request(session, spec, data)
    assert spec.id is not None
    bisect = Bisect(
        id=uuid.uuid4().hex,
        spec_id=spec.id,
        **data.model_dump(exclude={"allow_any_ref"}),
        lower_is_better=lower_is_better,
        runner=_pick_runner(session, spec.queue),
        trigger=trigger,
        sla_id=sla_id,
        ref_approved_by=ref_approved_by,
    )
    session.add(bisect)
    message = outbox.add_message(
        session, LIST_BISECT_COMMITS, bisect.id, queue=runner_queue(bisect.runner)
    )
    session.commit()
    outbox.send_now(session, [message])
    session.refresh(bisect)
    return bisect


def _check_request(session: Session, spec: BenchmarkSpec, data: BisectCreate) -> None:
    if git_url(spec.install) is None:
        raise InvalidInputError(
            f"spec {spec.name!r} has no install hook `git+URL@{{ref}}`, so it cannot run at a "
            "commit"
        )
    if data.budget < 2 * data.repeats + data.probe_repeats:
        raise InvalidInputError(
            f"budget {data.budget} cannot pay for {data.repeats} runs at good and at bad "
            "and one probe"
        )
    if data.good == data.bad:
        raise InvalidInputError("good and bad are the same ref")
    if _open_bisect(session, spec, data.label, data.metric) is not None:
        raise InvalidInputError(
            f"a bisect of {spec.name} {data.label} {data.metric} is already open"
        )


def _open_bisect(session: Session, spec: BenchmarkSpec, label: str, metric: str) -> Bisect | None:
    return session.exec(
        select(Bisect).where(
            Bisect.spec_id == spec.id,
            Bisect.label == label,
            Bisect.metric == metric,
            col(Bisect.status).in_(OPEN_STATUSES),
        )
    ).first()


def run_values(
    run: BenchmarkRun, labels: tuple[str, ...], metric: str
) -> tuple[list[float], str | None]:
    """The samples (or the single value) of `metric` at the first point whose label is in
    `labels` (the sweep label; a command's points carry their benchmark name), and its
    direction."""
    for point in run.results:
        if point.get("label") not in labels:
            continue
        for m in point.get("metrics") or []:
            if m.get("metric") == metric:
                values = m.get("samples") or ([m["value"]] if m.get("value") is not None else [])
                return [float(v) for v in values], m.get("direction")
    return [], None


def _measure(session: Session, bisect: Bisect) -> tuple[dict[str, Measured], str | None]:
    ids = [i for refs in bisect.runs.values() for i in refs]
    found = session.exec(select(BenchmarkRun).where(col(BenchmarkRun.id).in_(ids)))
    rows = {r.id: r for r in found}
    spec = session.get(BenchmarkSpec, bisect.spec_id)
    labels = (bisect.label, benchmark_name(spec.name if spec else "", bisect.label))
    out, direction = {}, None
    for ref, run_ids in bisect.runs.items():
        values: list[float] = []
        done = failed = pending = 0
        errors = []
        for run in (rows[i] for i in run_ids if i in rows):
            if run.status == RunStatus.SUCCEEDED:
                got, d = run_values(run, labels, bisect.metric)
                direction = direction or d
                if got:
                    values += got
                    done += 1
                else:
                    failed += 1
                    errors.append(f"run {run.id[:8]} has no {bisect.metric} {bisect.label}")
            elif run.status == RunStatus.FAILED:
                failed += 1
                errors.append(f"run {run.id[:8]} {run.reason}: {(run.error or '')[:200]}")
            else:
                pending += 1
        out[ref] = Measured(values, done, failed, pending, errors)
    return out, direction


def _state(bisect: Bisect, direction: str | None) -> State:
    lower = bisect.lower_is_better
    if lower is None:
        lower = direction != "higher_is_better"
    return State(
        status=bisect.status,
        good=bisect.good,
        bad=bisect.bad,
        commits=list(bisect.commits),
        repeats=bisect.repeats,
        probe_repeats=bisect.probe_repeats,
        budget=bisect.budget,
        margin_pct=bisect.margin_pct,
        lower_is_better=lower,
    )


def _verdicts(plan: Plan, measured: dict[str, Measured]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for ref, verdict in plan.verdicts.items():
        values = sorted(measured[ref].values) if ref in measured else []
        mid = values[len(values) // 2] if values else None
        out[ref] = {"verdict": verdict, "median": mid, "n": len(values)}
    return out


def _apply(session: Session, bisect: Bisect, plan: Plan, measured: dict[str, Measured]) -> bool:
    """Write the plan if nobody advanced the bisect since it was read; False if lost."""
    spec = session.get(BenchmarkSpec, bisect.spec_id)
    assert spec is not None
    runs = {ref: list(ids) for ref, ids in bisect.runs.items()}
    messages: list[OutboxMessage] = []
    for ref in plan.queue:
        run, message = add_run(
            session,
            spec,
            trigger="bisect",
            ref=ref,
            queue=runner_queue(bisect.runner),
            ref_approved_by=bisect.ref_approved_by,
        )
        runs.setdefault(ref, []).append(run.id)
        messages.append(message)
    values: dict[str, Any] = {
        "status": plan.status, "runs": runs, "verdicts": _verdicts(plan, measured),
        "last_good": plan.last_good, "first_bad": plan.first_bad, "error": plan.error,
        "version": bisect.version + 1, "updated_at": utc_now(),
    }  # fmt: skip
    taken = session.connection().execute(
        update(Bisect)
        .where(col(Bisect.id) == bisect.id, col(Bisect.version) == bisect.version)
        .values(**values)
    )
    if taken.rowcount != 1:
        session.rollback()
        return False
    if plan.status not in OPEN_STATUSES:
        session.flush()
        session.refresh(bisect)
        event, payload, text = bisect_event(session, bisect, spec)
        messages += record_event(session, event, spec.project, payload, text)
    session.commit()
    outbox.send_now(session, messages)
    return True


def advance(session: Session, bisect_id: str) -> Bisect | None:
    """Take the bisect one step further if its finished runs allow it (idempotent).

    Returns:
        The bisect as it stands after the step, or None if it does not exist.
    """
    for _ in range(_MAX_ROUNDS):
        session.expire_all()
        bisect = session.get(Bisect, bisect_id)
        if bisect is None or bisect.status not in OPEN_STATUSES or not bisect.commits:
            return bisect  # done, or the runner has not checked its refs yet
        measured, direction = _measure(session, bisect)
        plan = decide(_state(bisect, direction), measured)
        waiting = plan.status == bisect.status and not plan.queue
        if waiting and (not plan.verdicts or _verdicts(plan, measured) == bisect.verdicts):
            return bisect
        if _apply(session, bisect, plan, measured):
            session.refresh(bisect)
            return bisect
    return session.get(Bisect, bisect_id)


def advance_for_run(session: Session, run_id: str) -> None:
    """Advance every open bisect that queued this (now finished) run."""
    run = session.get(BenchmarkRun, run_id)
    if run is None or run.trigger != "bisect":
        return
    open_ones = session.exec(
        select(Bisect).where(Bisect.spec_id == run.spec_id, col(Bisect.status).in_(OPEN_STATUSES))
    ).all()
    for bisect_id in [b.id for b in open_ones if any(run_id in ids for ids in b.runs.values())]:
        advance(session, bisect_id)


def series_commits(session: Session, bisect: Bisect, spec: BenchmarkSpec) -> list[str]:
    """good, the commits pushed between, bad: from the series when git cannot list them."""
    ordered = pushed_commits(session, spec, benchmark_name(spec.name, bisect.label))
    if bisect.good in ordered and bisect.bad in ordered:
        inside = ordered[ordered.index(bisect.good) + 1 : ordered.index(bisect.bad)]
        return [bisect.good, *[c for c in inside if c not in (bisect.good, bisect.bad)], bisect.bad]
    return [bisect.good, bisect.bad]


def store_commits(
    session: Session, bisect_id: str, commits: list[str] | None, error: str = ""
) -> None:
    """Store the runner's `git rev-list` (good..bad, oldest first), or fall back to the
    series' pushed commits when it could not list them, then advance (the first runs).

    The runner calls it only once it found good and bad on allowed branches; every run
    is checked again before it installs anything."""
    for _ in range(_MAX_ROUNDS):
        session.expire_all()
        bisect = session.get(Bisect, bisect_id)
        spec = session.get(BenchmarkSpec, bisect.spec_id) if bisect else None
        if bisect is None or spec is None or bisect.commits:
            return
        if commits:
            chain, source = [bisect.good, *commits[:-1], bisect.bad], "git"
        else:
            log.warning("bisect %s: git rev-list failed (%s); using the series", bisect_id, error)
            chain, source = series_commits(session, bisect, spec), "series"
        taken = session.connection().execute(
            update(Bisect)
            .where(col(Bisect.id) == bisect_id, col(Bisect.version) == bisect.version)
            .values(commits=chain, commits_source=source, version=bisect.version + 1)
        )
        if taken.rowcount == 1 and bisect.sla_id:
            note_verdict(session, bisect.sla_id, bisect.bad, {"status": "started", "id": bisect_id})
        session.commit()
        if taken.rowcount == 1:
            advance(session, bisect_id)
            return


def refuse_bisect(session: Session, bisect_id: str, reason: str) -> None:
    """End a bisect whose refs the runner would not run (`failed`, with the reason; its
    regression verdict says why no bisect started) before any run was queued."""
    error = f"ref_not_allowed: {reason}"
    for _ in range(_MAX_ROUNDS):
        session.expire_all()
        bisect = session.get(Bisect, bisect_id)
        if bisect is None or bisect.status not in OPEN_STATUSES:
            return
        if bisect.sla_id:
            note = {"status": "not_started", "id": bisect_id, "reason": error}
            note_verdict(session, bisect.sla_id, bisect.bad, note)
        if _apply(session, bisect, Plan(BisectStatus.FAILED, error=error), {}):
            return


def pushed_commits(session: Session, spec: BenchmarkSpec, benchmark: str) -> list[str]:
    """The distinct commits pushed to the spec branch's series, oldest first."""
    rows = session.exec(
        select(MetricRun.commit)
        .where(
            MetricRun.project == spec.project,
            MetricRun.benchmark == benchmark,
            MetricRun.branch == spec.branch,
        )
        .order_by(col(MetricRun.timestamp))
    ).all()
    return list(dict.fromkeys(c for c in rows if c))
