"""A benchmark run's life on the runner side: claim, record the result, or fail it.

The metrics of a run go through `metric_push.push_metrics`, the code path of CI pushes,
so SLAs (the determinism SLA included) and regression detection apply unchanged. The
profiler trace is stored by `traces.accept_upload`, the path of an upload, and linked.

Public surface: `claim_run`, `requeue_run`, `fail_run`, `finish_run`, `metric_document`,
`FailureReason`, `pushed_environment`.
"""

from enum import StrEnum
from typing import Any

from sqlmodel import Session, col, select

from backend.core.clock import utc_now
from backend.models.benchmarks import BenchmarkRun, BenchmarkSpec, RunStatus, WorkloadKind
from backend.models.bisects import BISECT_BRANCH_PREFIX
from backend.models.metrics import MetricPoint, MetricRun
from backend.models.slas import SlaVerdict
from backend.services.benchmarks.bisect_trigger import start_from_verdicts
from backend.services.metrics import MetricDocumentError, push_metrics


class FailureReason(StrEnum):
    """Why a run failed; shown on the pages and in the API."""

    OOM = "oom"
    KILLED = "killed"  # died of a signal (the runner), or its worker died mid-run
    EXIT_CODE = "exit_code"  # the runner exited without a result (code in the error)
    TIME_LIMIT = "time_limit"
    ERROR = "error"
    BAD_OUTPUT = "bad_output"
    INSTALL = "install"
    # The ref is on none of the spec's allowed branches: nothing of it was installed.
    REF_NOT_ALLOWED = "ref_not_allowed"


def claim_run(
    session: Session, run_id: str, runner: str
) -> tuple[BenchmarkRun, BenchmarkSpec] | None:
    """Mark a queued run running on `runner`, or say there is nothing to do (None).

    A run found `running` was being executed by a worker that died (acks_late redelivers
    its message); it is failed as `killed` rather than run again, so a run that kills
    its worker cannot block the queue forever.
    """
    run = session.get(BenchmarkRun, run_id)
    spec = session.get(BenchmarkSpec, run.spec_id) if run else None
    if run is None or spec is None or run.status in (RunStatus.SUCCEEDED, RunStatus.FAILED):
        return None
    if run.status == RunStatus.RUNNING:
        message = f"the worker running it ({run.runner}) died: killed, or out of host memory"
        fail_run(session, run_id, FailureReason.KILLED, message)
        return None
    run.status, run.runner, run.started_at = RunStatus.RUNNING, runner, utc_now()
    run.attempts += 1
    session.add(run)
    session.commit()
    session.refresh(run)
    return run, spec


def requeue_run(session: Session, run_id: str) -> None:
    """Put a run back to `queued` before a transient-error retry."""
    run = session.get(BenchmarkRun, run_id)
    if run is not None and run.status == RunStatus.RUNNING:
        run.status = RunStatus.QUEUED
        session.add(run)
        session.commit()


def fail_run(session: Session, run_id: str, reason: FailureReason, error: str) -> None:
    """Mark the run failed with a reason and a message."""
    run = session.get(BenchmarkRun, run_id)
    if run is None:
        return
    run.status, run.reason, run.error = RunStatus.FAILED, reason.value, error[:8000]
    run.finished_at = utc_now()
    session.add(run)
    session.commit()


def _benchmark_name(spec: BenchmarkSpec, label: str) -> str:
    return f"{spec.name}[{label}]" if label else spec.name


def pushed_environment(environment: dict[str, Any]) -> dict[str, Any]:
    """The run's environment for its metric runs: the GPU state's summaries and the flags,
    without the per-sample series (those stay on the benchmark run, for its page)."""
    state = environment.get("gpu_state")
    if not isinstance(state, dict):
        return environment
    gpus = [{k: v for k, v in g.items() if k != "series"} for g in state.get("gpus", [])]
    return {**environment, "gpu_state": {**state, "gpus": gpus}}


def pushed_branch(spec: BenchmarkSpec, run: BenchmarkRun) -> str:
    """The branch a run's metrics are filed under: a bisect's runs measure old commits
    now, so they go to `bisect/<branch>`, out of the baseline series SLAs read."""
    return f"{BISECT_BRANCH_PREFIX}{spec.branch}" if run.trigger == "bisect" else spec.branch


def _environment(run: BenchmarkRun, result: dict[str, Any]) -> dict[str, Any]:
    """The runner's environment, with the run's A/A batch for the noise band."""
    env = dict(result.get("environment") or {})
    return {**env, "aa_group": run.aa_group} if run.aa_group else env


def metric_document(
    spec: BenchmarkSpec, run: BenchmarkRun, result: dict[str, Any], trace_id: str | None
) -> dict[str, Any]:
    """The run's points as one native JSON document (one benchmark per sweep point)."""
    points: list[dict[str, Any]] = []
    for point in result["points"]:
        name = _benchmark_name(spec, point["label"])
        points += [{**m, "benchmark": name} for m in point["metrics"]]
        if point.get("hash") and point["label"]:
            points.append({"benchmark": name, "metric": "determinism_hash", "hash": point["hash"]})
    doc: dict[str, Any] = {
        "project": spec.project,
        "benchmark": spec.name,
        "commit": run.ref,
        "branch": pushed_branch(spec, run),
        "run_id": f"bench-{run.id}",
        "timestamp": (run.started_at or utc_now()).isoformat(),
        "environment": pushed_environment(_environment(run, result)),
        "points": points,
    }
    if trace_id:
        doc["trace_id"] = trace_id
    if result.get("determinism_hash"):
        doc["determinism_hash"] = result["determinism_hash"]
    return doc


def _push(
    session: Session,
    spec: BenchmarkSpec,
    run: BenchmarkRun,
    result: dict[str, Any],
    trace: str | None,
) -> tuple[list[int], list[SlaVerdict]]:
    if spec.kind != WorkloadKind.COMMAND:
        pushed = push_metrics(session, metric_document(spec, run, result, trace), fmt="native")
        return pushed.runs, pushed.verdicts
    ids: list[int] = []
    env = pushed_environment(result.get("environment") or {})
    guard: dict[str, Any] = {k: env[k] for k in ("gpu_state", "flags", "settle") if k in env}
    verdicts: list[SlaVerdict] = []
    for point in result["points"]:
        defaults = {
            "project": spec.project,
            "benchmark": _benchmark_name(spec, point["label"]),
            "commit": run.ref,
            "branch": pushed_branch(spec, run),
            # Per point: a command may name its benchmarks the same at every sweep point.
            "run_id": f"bench-{run.id}" + (f"[{point['label']}]" if point["label"] else ""),
        }
        pushed = push_metrics(session, point["document"], defaults=defaults, environment=guard)
        ids += pushed.runs
        verdicts += pushed.verdicts
    return ids, verdicts


def _stored_points(session: Session, metric_run_ids: list[int]) -> list[dict[str, Any]]:
    """What a command's documents became, as result points (for the run page)."""
    rows = session.exec(
        select(MetricRun, MetricPoint)
        .join(MetricPoint, col(MetricPoint.run_id) == col(MetricRun.id))
        .where(col(MetricRun.id).in_(metric_run_ids))
        .order_by(col(MetricRun.id), col(MetricPoint.id))
    )
    by_run: dict[str, list[dict[str, Any]]] = {}
    for mrun, p in rows:
        metric: dict[str, Any] = {"metric": p.metric, "unit": p.unit, "direction": p.direction}
        metric |= {"samples": p.samples} if p.samples else {"value": p.value}
        by_run.setdefault(mrun.benchmark, []).append(metric)
    return [{"label": b, "params": {}, "metrics": m} for b, m in by_run.items()]


def finish_run(
    session: Session, run_id: str, result: dict[str, Any], trace_id: str | None
) -> BenchmarkRun:
    """Push the metrics, then store the result on the run and mark it succeeded.

    A command whose output is not a valid metrics document fails the run (`bad_output`)
    with the document's problems, and nothing is stored from it.
    """
    run = session.get(BenchmarkRun, run_id)
    spec = session.get(BenchmarkSpec, run.spec_id) if run else None
    if run is None or spec is None:
        raise LookupError(f"benchmark run {run_id} vanished while running")
    try:
        metric_runs, verdicts = _push(session, spec, run, result, trace_id)
    except MetricDocumentError as e:
        fail_run(session, run_id, FailureReason.BAD_OUTPUT, f"the command's output: {e}")
        session.refresh(run)
        return run
    points = result["points"]
    if spec.kind == WorkloadKind.COMMAND:
        points = _stored_points(session, metric_runs)
    run.status, run.reason, run.error = RunStatus.SUCCEEDED, None, None
    run.environment = result.get("environment") or {}
    run.warnings = result.get("warnings") or []
    run.determinism_hash = result.get("determinism_hash")
    run.results = [{k: v for k, v in p.items() if k != "document"} for p in points]
    run.metric_run_ids, run.trace_id, run.finished_at = metric_runs, trace_id, utc_now()
    session.add(run)
    session.commit()
    if run.trigger != "bisect":  # a bisect's own runs measure old commits on purpose
        start_from_verdicts(session, verdicts)
    session.refresh(run)
    return run
