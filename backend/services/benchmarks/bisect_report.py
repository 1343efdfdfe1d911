"""What a bisect shows: its public shape (steps table, runs used, trace diff) and the
webhook event it sends when it ends.

Public surface: `benchmark_name`, `to_public`, `get_bisect`, `list_bisects`,
`bisect_event`, `trace_diff`.
"""

from typing import Any

from sqlmodel import Session, col, select

from backend.core.markdown_escape import slack_text
from backend.models.benchmarks import BenchmarkRun, BenchmarkSpec, RunStatus
from backend.models.bisects import Bisect, BisectPublic, BisectStatus, BisectStep
from backend.services.benchmarks.specs import get_spec
from backend.services.errors import NotFoundError


def benchmark_name(spec_name: str, label: str) -> str:
    """The series name of a spec's sweep point, as the metrics push files it.

    >>> benchmark_name("gemm", "m=16")
    'gemm[m=16]'
    """
    return f"{spec_name}[{label}]" if label else spec_name


def _steps(bisect: Bisect) -> list[BisectStep]:
    position = {ref: i for i, ref in enumerate(bisect.commits)}
    last = len(bisect.commits) - 1 if bisect.commits else 1
    steps = []
    for ref, run_ids in bisect.runs.items():
        judged = bisect.verdicts.get(ref) or {}
        role = "good" if ref == bisect.good else "bad" if ref == bisect.bad else "probe"
        at = position.get(ref, 0 if role == "good" else last)
        steps.append(
            BisectStep(
                ref=ref,
                position=at,
                role=role,
                runs=run_ids,
                verdict=judged.get("verdict"),
                median=judged.get("median"),
                n=int(judged.get("n") or 0),
            )
        )
    return sorted(steps, key=lambda s: s.position)


def _trace_of(session: Session, run_ids: list[str]) -> str | None:
    rows = session.exec(
        select(BenchmarkRun).where(
            col(BenchmarkRun.id).in_(run_ids), BenchmarkRun.status == RunStatus.SUCCEEDED
        )
    ).all()
    traced = [r.trace_id for r in rows if r.trace_id]
    return traced[-1] if traced else None


def trace_diff(session: Session, bisect: Bisect) -> str | None:
    """The compare page of the last good and first bad commits' profiler traces (when the
    spec captures them)."""
    if not (bisect.last_good and bisect.first_bad):
        return None
    a = _trace_of(session, bisect.runs.get(bisect.last_good, []))
    b = _trace_of(session, bisect.runs.get(bisect.first_bad, []))
    return f"/compare?a={a}&b={b}" if a and b else None


def to_public(session: Session, bisect: Bisect, spec: BenchmarkSpec) -> BisectPublic:
    """The bisect with its steps, runs used and trace diff."""
    return BisectPublic(
        **bisect.model_dump(exclude={"spec_id", "runs", "verdicts", "version", "status"}),
        status=BisectStatus(bisect.status),
        spec_name=spec.name,
        benchmark=benchmark_name(spec.name, bisect.label),
        steps=_steps(bisect),
        runs_used=sum(len(ids) for ids in bisect.runs.values()),
        trace_diff=trace_diff(session, bisect),
    )


def get_bisect(session: Session, bisect_id: str) -> BisectPublic:
    """One bisect, or NotFoundError."""
    bisect = session.get(Bisect, bisect_id)
    spec = session.get(BenchmarkSpec, bisect.spec_id) if bisect else None
    if bisect is None or spec is None:
        raise NotFoundError(f"bisect {bisect_id} not found")
    return to_public(session, bisect, spec)


def list_bisects(session: Session, name: str, *, limit: int = 50) -> list[BisectPublic]:
    """The spec's bisects, newest first."""
    spec = get_spec(session, name)
    rows = session.exec(
        select(Bisect)
        .where(Bisect.spec_id == spec.id)
        .order_by(col(Bisect.created_at).desc())
        .limit(limit)
    ).all()
    return [to_public(session, b, spec) for b in rows]


def bisect_event(
    session: Session, bisect: Bisect, spec: BenchmarkSpec
) -> tuple[str, dict[str, Any], str]:
    """The webhook event of a finished bisect: name, JSON payload and Slack text."""
    public = to_public(session, bisect, spec)
    payload: dict[str, Any] = {
        "bisect": public.model_dump(mode="json", exclude={"steps"}),
        "project": spec.project,
        "links": {
            "bisect": f"/api/v1/bisects/{bisect.id}",
            "benchmark": f"/benchmarks/{spec.name}",
            "trace_diff": public.trace_diff,
        },
    }
    where = slack_text(f"{spec.project}/{public.benchmark}/{bisect.metric}")
    if bisect.first_bad and bisect.status == "found":
        found = f"bisected to `{slack_text(bisect.first_bad)}`"
    else:
        found = slack_text(f"{bisect.status}: {bisect.error or ''}")
    text = f":mag: bisect of {where} ({public.runs_used} runs): {found}"
    return "bisect", payload, text
