"""The one path metric points take into the database: CI pushes and benchmark runs.

`push_metrics` parses a document in any accepted format, stores its runs and points
idempotently in one transaction, evaluates the affected SLAs inline and commits; alert
deliveries are queued after the commit. The HTTP route and the benchmark runner both
call it.

A run is identified by (project, benchmark, run_id or url or commit), and a point by
(run, metric): a retried push finds its rows and stores nothing new, and answers with the
verdicts stored the first time.

Public surface: `push_metrics`, `PushResult`.
"""

import hashlib
import logging
from typing import Any

from sqlalchemy import Table
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, SQLModel, select

from backend.models.metrics import MetricPoint, MetricRun
from backend.models.slas import SlaVerdict, Verdict
from backend.services import outbox
from backend.services.metrics.formats import ParsedPoint, ParsedPush, parse_document
from backend.services.series import summarize
from backend.services.slas import affected_slas, evaluate_run, record_changes, stored_verdicts

log = logging.getLogger(__name__)
_POINTS: Table = MetricPoint.__table__  # type: ignore[attr-defined]


class PushResult(SQLModel):
    """What a push did: points stored, points already there, and each affected SLA's verdict."""

    format: str
    runs: list[int]
    stored: int
    duplicates: int
    verdicts: list[SlaVerdict]

    @property
    def breached(self) -> bool:
        """True when any SLA failed on this push."""
        return any(v.verdict == Verdict.FAIL for v in self.verdicts)


def _run_key(push: ParsedPush, benchmark: str) -> str:
    key = push.run_id or push.url or push.commit
    return hashlib.sha256(f"{push.project}\0{benchmark}\0{key}".encode()).hexdigest()


def _point_row(run_id: int, p: ParsedPoint) -> dict[str, Any]:
    stats: dict[str, float] = summarize(p.samples) if p.samples else dict(p.stats)
    if p.value is not None and not stats:
        stats = {k: p.value for k in ("mean", "min", "max", "p05", "p50", "p95", "p99")}
        stats["n"] = 1
    keys = ("mean", "stddev", "min", "max", "p05", "p50", "p95", "p99")
    return {
        "run_id": run_id,
        "metric": p.metric,
        "unit": p.unit,
        "direction": p.direction,
        "value": p.value,
        "hash": p.hash,
        "samples": p.samples,
        "n": int(stats.get("n", 0)),
        **{k: stats.get(k) for k in keys},
    }


def _get_or_create_run(session: Session, push: ParsedPush, benchmark: str) -> MetricRun:
    key = _run_key(push, benchmark)
    run = session.exec(select(MetricRun).where(MetricRun.idempotency_key == key)).first()
    if run is None:
        run = MetricRun(
            idempotency_key=key,
            project=push.project,
            benchmark=benchmark,
            commit=push.commit,
            branch=push.branch,
            run_id=push.run_id,
            url=push.url,
            trace_id=push.trace_id,
            timestamp=push.timestamp,
            environment=push.environment,
        )
        session.add(run)
        session.flush()
    return run


def _store_benchmark(
    session: Session, push: ParsedPush, benchmark: str, points: list[ParsedPoint]
) -> tuple[MetricRun, int, list[SlaVerdict]]:
    """Store one benchmark's run and its new points; returns (run, duplicates, verdicts)."""
    run = _get_or_create_run(session, push, benchmark)
    assert run.id is not None
    existing = set(
        session.exec(select(MetricPoint.metric).where(MetricPoint.run_id == run.id)).all()
    )
    new = [p for p in points if p.metric not in existing]
    if not new:
        return run, len(points), stored_verdicts(session, run)
    rows = [_point_row(run.id, p) for p in new]
    # Core executemany, not the ORM: the ORM bulk path costs more than the database here.
    session.connection().execute(_POINTS.insert(), rows)
    slas = affected_slas(session, run)
    if not slas:
        return run, len(points) - len(new), []
    wanted = {s.metric for s in slas}
    by_metric = {r["metric"]: MetricPoint(**r) for r in rows if r["metric"] in wanted}
    verdicts = evaluate_run(session, run, by_metric, slas)
    return run, len(points) - len(new), verdicts


def _store(session: Session, push: ParsedPush) -> PushResult:
    by_benchmark: dict[str, list[ParsedPoint]] = {}
    for point in push.points:
        by_benchmark.setdefault(point.benchmark, []).append(point)
    runs, duplicates, verdicts = [], 0, []
    for benchmark, points in by_benchmark.items():
        run, dup, judged = _store_benchmark(session, push, benchmark, points)
        assert run.id is not None
        runs.append(run.id)
        duplicates += dup
        verdicts.extend(judged)
    stored = len(push.points) - duplicates
    return PushResult(
        format=push.format, runs=runs, stored=stored, duplicates=duplicates, verdicts=verdicts
    )


def push_metrics(
    session: Session,
    doc: dict[str, Any] | list[Any],
    *,
    fmt: str | None = None,
    defaults: dict[str, str] | None = None,
    environment: dict[str, Any] | None = None,
) -> PushResult:
    """Store a metrics document and evaluate the SLAs it touches (commits the session).

    Args:
        session: an open session; it is committed here, or rolled back on error.
        doc: the decoded JSON document (native, pytest-benchmark, Google Benchmark or
            github-action-benchmark).
        fmt: the format name, or None to detect it.
        defaults: values for run fields the format lacks (project, commit, branch, run_id,
            url, benchmark).
        environment: keys laid over the document's own environment (a benchmark run's
            GPU state and flags over what a command's output says).

    Returns:
        The stored/duplicate counts and the SLA verdicts.

    Raises:
        MetricDocumentError: the document is invalid; nothing was stored.
    """
    push = parse_document(doc, fmt=fmt, defaults=defaults)
    if environment:
        push.environment = {**push.environment, **environment}
    for attempt in (1, 2):
        try:
            result = _store(session, push)
            messages = record_changes(session, result.verdicts)
            session.commit()
            break
        except IntegrityError:
            # A concurrent retry of the same push won the race; the second pass finds its rows.
            session.rollback()
            if attempt == 2:
                raise
        except BaseException:
            session.rollback()
            raise
    outbox.send_now(session, messages)
    return result
