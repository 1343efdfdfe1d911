"""Benchmark specs and run requests: upsert (with a diff), list, delete, enqueue.

A run is a row first and a Celery message second: the row is committed `queued` with its
outbox message (`backend.services.outbox.messages`) in one transaction, then `run_benchmark` is
sent by name to the spec's runner queue (`gpu` by default) with the spec's time limit, so
the backend never imports the workers. A broker outage leaves the message to the sweeper.

Public surface: `apply_specs`, `upsert_spec`, `get_spec`, `list_specs`, `delete_spec`,
`request_run`, `add_run`, `get_run`, `list_runs`, `enqueue_due_runs`, `spec_hash`,
`run_branches`.
"""

import hashlib
import json
import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlmodel import Session, col, func, select

from backend.core.config import Settings, get_settings
from backend.core.task_names import RUN_BENCHMARK
from backend.models.benchmarks import (
    MAX_REPEAT,
    BenchmarkRun,
    BenchmarkRunPublic,
    BenchmarkSpec,
    BenchmarkSpecCreate,
    BenchmarkSpecPublic,
    RunStatus,
    SpecChange,
    WorkloadKind,
)
from backend.models.outbox import OutboxMessage
from backend.services import outbox
from backend.services.benchmarks.cron import CronError, due_between, parse_cron
from backend.services.errors import InvalidInputError, NotFoundError

# Fields that change what is measured; the spec hash covers exactly these.
_MEASURED = (
    "kind", "workload", "command", "output_file", "params", "sweep",
    "seed", "warmup", "iters", "deterministic", "install",
)  # fmt: skip
_GRACE_S = 60  # hard limit = soft limit + this, so the runner can report a soft timeout


def spec_hash(data: BenchmarkSpecCreate | BenchmarkSpec) -> str:
    """sha256 over the measured fields, in canonical JSON.

    `settle` counts when set: a settled run times a warm, steady GPU, an unsettled one
    whatever state the last job left, and the two must not share a baseline. Left out
    when unset, so the hashes of specs stored before it existed do not change; so is
    `env` (`OMP_NUM_THREADS` changes what is timed).
    """
    fields = {k: getattr(data, k) for k in _MEASURED}
    if data.settle is not None:
        fields["settle"] = data.settle
    if data.env:
        fields["env"] = data.env
    return hashlib.sha256(json.dumps(fields, sort_keys=True, default=str).encode()).hexdigest()


def runs_user_code(data: BenchmarkSpecCreate | BenchmarkSpec) -> bool:
    """Whether storing the spec lets it run code of the caller's choosing on a runner.

    Callables import a function by name, commands run an argv, install hooks run a
    shell line, and variables such as `LD_PRELOAD` load a library of their naming: each
    needs an admin (`CHANGE_RUNNER_CODE`), whatever else changes. So do the allowed
    branches, which only matter with an install hook.
    """
    kinds = (WorkloadKind.CALLABLE, WorkloadKind.COMMAND)
    return data.kind in kinds or bool(data.install) or bool(data.env)


def run_branches(spec: BenchmarkSpec) -> list[str]:
    """The branch patterns a run's ref must be reachable from: the allowed ones, or the
    spec's `branch`."""
    return list(spec.allowed_branches) or [spec.branch]


def _strings(value: Any, where: str) -> Iterator[tuple[str, str]]:
    """Every string inside a JSON-like value, with its dotted path."""
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{where}.{key}")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from _strings(item, f"{where}[{i}]")


_PATH_PIECES = re.compile(r"[=,;:\s]+")


def _inside(piece: str, roots: tuple[Path, ...]) -> bool:
    if "/" not in piece:
        return False
    try:
        path = Path(piece).expanduser().resolve()
    except (OSError, RuntimeError, ValueError):
        return False
    return any(path == root or root in path.parents for root in roots)


def check_storage_paths(data: BenchmarkSpecCreate | BenchmarkSpec, settings: Settings) -> None:
    """Refuse a spec whose fields name a file in perfdash's own storage.

    Uploaded blobs are attacker-chosen bytes at predictable paths, so a workload that is
    handed one (a config file, a pickle; an `env` variable naming it) can be turned into
    code execution on the runner; the database and broker folders under DATA_DIR are no
    better. A string counts when it, or any piece of it split at `=`, `,`, `;`, `:` or
    spaces, resolves inside STORAGE_DIR or DATA_DIR, or when it contains either
    folder's path.

    Raises:
        InvalidInputError: naming the field and the storage folder.
    """
    roots = (settings.blob_dir, settings.data_dir.resolve())
    fields = {
        "params": data.params, "sweep": data.sweep, "command": data.command,
        "output_file": data.output_file, "install": data.install, "workload": data.workload,
        "env": data.env,
    }  # fmt: skip
    for name, value in fields.items():
        for where, text in _strings(value, name):
            pieces = [text, *_PATH_PIECES.split(text)]
            if any(str(root) in text for root in roots) or any(_inside(p, roots) for p in pieces):
                raise InvalidInputError(
                    f"spec {data.name}: {where} names a path inside perfdash's storage "
                    f"(STORAGE_DIR {settings.blob_dir} or DATA_DIR); uploaded files are never "
                    "inputs to a benchmark"
                )


def _check(data: BenchmarkSpecCreate) -> None:
    if data.schedule:
        try:
            parse_cron(data.schedule)
        except CronError as e:
            raise InvalidInputError(f"spec {data.name}: schedule: {e}") from e
    check_storage_paths(data, get_settings())


def upsert_spec(session: Session, data: BenchmarkSpecCreate) -> tuple[BenchmarkSpec, SpecChange]:
    """Create or update a spec by name; the change lists each field's (old, new).

    Callers decide who may store specs that run their own code (`runs_user_code`:
    admins only).

    Raises:
        InvalidInputError: the schedule is not valid cron, or a field names a path in
            perfdash's storage.
    """
    _check(data)
    values = data.model_dump()
    spec = session.exec(select(BenchmarkSpec).where(BenchmarkSpec.name == data.name)).first()
    if spec is None:
        spec = BenchmarkSpec(**values, spec_hash=spec_hash(data))
        change = SpecChange(name=data.name, action="created")
    else:
        diff = {k: [getattr(spec, k), v] for k, v in values.items() if getattr(spec, k) != v}
        change = SpecChange(name=data.name, action="updated" if diff else "unchanged", changes=diff)
        for key, value in values.items():
            setattr(spec, key, value)
        spec.spec_hash, spec.updated_at = spec_hash(data), datetime.now(UTC)
    session.add(spec)
    session.commit()
    session.refresh(spec)
    return spec, change


def apply_specs(session: Session, specs: list[BenchmarkSpecCreate]) -> list[SpecChange]:
    """Upsert every spec of a YAML file; all are checked before any is stored."""
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise InvalidInputError("a spec name appears twice in the file")
    for data in specs:
        _check(data)
    return [upsert_spec(session, data)[1] for data in specs]


def get_spec(session: Session, name: str) -> BenchmarkSpec:
    """The spec, or NotFoundError."""
    spec = session.exec(select(BenchmarkSpec).where(BenchmarkSpec.name == name)).first()
    if spec is None:
        raise NotFoundError(f"benchmark spec {name!r} not found")
    return spec


def _last_runs(session: Session, spec_ids: list[int]) -> dict[int, BenchmarkRun]:
    latest = (
        select(BenchmarkRun.spec_id, func.max(BenchmarkRun.created_at).label("at"))
        .where(col(BenchmarkRun.spec_id).in_(spec_ids))
        .group_by(col(BenchmarkRun.spec_id))
        .subquery()
    )
    rows = session.exec(
        select(BenchmarkRun).join(
            latest,
            (col(BenchmarkRun.spec_id) == latest.c.spec_id)
            & (col(BenchmarkRun.created_at) == latest.c.at),
        )
    )
    return {r.spec_id: r for r in rows}


def list_specs(session: Session) -> list[BenchmarkSpecPublic]:
    """Every spec, by name, with its latest run."""
    specs = list(session.exec(select(BenchmarkSpec).order_by(col(BenchmarkSpec.name))))
    last = _last_runs(session, [s.id for s in specs if s.id is not None])
    out = []
    for spec in specs:
        run = last.get(spec.id or -1)
        public = BenchmarkSpecPublic.model_validate(spec, from_attributes=True)
        public.last_run = BenchmarkRunPublic.of(run, spec) if run else None
        out.append(public)
    return out


def delete_spec(session: Session, name: str) -> None:
    """Delete a spec and its runs (the metric points they pushed stay)."""
    session.delete(get_spec(session, name))
    session.commit()


def add_run(
    session: Session,
    spec: BenchmarkSpec,
    *,
    trigger: str,
    ref: str = "",
    queue: str = "",
    aa_group: str = "",
    ref_approved_by: str | None = None,
) -> tuple[BenchmarkRun, OutboxMessage]:
    """Add a queued run and its outbox message to the session (the caller commits, then
    sends the message); `queue` overrides the spec's (a runner's own queue);
    `ref_approved_by` names the admin who let the ref be off the allowed branches."""
    assert spec.id is not None
    run = BenchmarkRun(
        id=uuid.uuid4().hex,
        spec_id=spec.id,
        trigger=trigger,
        ref=ref,
        aa_group=aa_group,
        spec_hash=spec.spec_hash,
        ref_approved_by=ref_approved_by,
    )
    session.add(run)
    message = outbox.add_message(
        session,
        RUN_BENCHMARK,
        run.id,
        queue=queue or spec.queue,
        soft_time_limit=spec.timeout_s + _GRACE_S,
        time_limit=spec.timeout_s + 2 * _GRACE_S,
    )
    return run, message


def request_run(
    session: Session,
    name: str,
    *,
    trigger: str = "api",
    ref: str = "",
    repeat: int = 1,
    ref_approved_by: str | None = None,
) -> list[BenchmarkRun]:
    """Create `repeat` queued runs of one ref and their outbox messages, commit, then send
    `run_benchmark` to the spec's queue; if the broker is down the runs stay queued and the
    sweeper sends them.

    More than one run is an A/A batch (the noise band): the runs share an `aa_group`,
    which their metrics carry as `environment.aa_group`, and their trigger is `aa`.
    The runner installs a ref only if it is on one of `run_branches(spec)`, unless an
    admin approved it (`ref_approved_by`, checked by the caller).

    Raises:
        NotFoundError: no such spec.
        InvalidInputError: a ref for a spec without an install hook, or `repeat` outside
            1..MAX_REPEAT.
    """
    spec = get_spec(session, name)
    if ref and not spec.install:
        raise InvalidInputError(f"spec {name!r} has no install hook, so it cannot run at {ref!r}")
    if not 1 <= repeat <= MAX_REPEAT:
        raise InvalidInputError(f"repeat: {repeat} runs, the limit is 1..{MAX_REPEAT}")
    group = uuid.uuid4().hex if repeat > 1 else ""
    runs, messages = [], []
    for _ in range(repeat):
        run, message = add_run(
            session,
            spec,
            trigger="aa" if group else trigger,
            ref=ref,
            aa_group=group,
            ref_approved_by=ref_approved_by if ref else None,
        )
        runs.append(run)
        messages.append(message)
    session.commit()
    outbox.send_now(session, messages)
    for run in runs:
        session.refresh(run)
    return runs


def get_run(session: Session, run_id: str) -> tuple[BenchmarkRun, BenchmarkSpec]:
    """A run and its spec, or NotFoundError."""
    run = session.get(BenchmarkRun, run_id)
    spec = session.get(BenchmarkSpec, run.spec_id) if run else None
    if run is None or spec is None:
        raise NotFoundError(f"benchmark run {run_id} not found")
    return run, spec


def list_runs(
    session: Session,
    *,
    name: str | None,
    limit: int,
    offset: int,
    status: RunStatus | None = None,
) -> tuple[list[BenchmarkRunPublic], int]:
    """Runs newest first, of one spec or of all, of one status or of any."""
    query: Any = select(BenchmarkRun, BenchmarkSpec).join(
        BenchmarkSpec, col(BenchmarkSpec.id) == col(BenchmarkRun.spec_id)
    )
    counter: Any = select(func.count()).select_from(BenchmarkRun)
    if name is not None:
        spec = get_spec(session, name)
        query = query.where(BenchmarkRun.spec_id == spec.id)
        counter = counter.where(BenchmarkRun.spec_id == spec.id)
    if status is not None:
        query = query.where(BenchmarkRun.status == status)
        counter = counter.where(BenchmarkRun.status == status)
    rows = session.exec(
        query.order_by(col(BenchmarkRun.created_at).desc()).offset(offset).limit(limit)
    )
    return [BenchmarkRunPublic.of(r, s) for r, s in rows], session.exec(counter).one()


def enqueue_due_runs(session: Session, now: datetime | None = None) -> list[str]:
    """Queue a run of every scheduled spec whose cron fired since it was last scheduled
    (`aa_repeats` runs of it: an A/A batch when more than one)."""
    now = now or datetime.now(UTC)
    queued: list[str] = []
    for spec in session.exec(select(BenchmarkSpec).where(col(BenchmarkSpec.schedule).is_not(None))):
        after = spec.last_scheduled_at or spec.created_at
        after = after if after.tzinfo else after.replace(tzinfo=UTC)
        fired = due_between(parse_cron(spec.schedule or ""), after, now)
        if fired is None:
            continue
        spec.last_scheduled_at = fired
        session.add(spec)
        session.commit()
        runs = request_run(session, spec.name, trigger="schedule", repeat=spec.aa_repeats)
        queued.extend(r.id for r in runs)
    return queued
