"""Recording a run's result: the metrics push path, the determinism SLA, failure rules."""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session

from backend.models.benchmarks import BenchmarkRun, BenchmarkSpecCreate, RunStatus
from backend.models.slas import Rule, SlaCreate
from backend.services.benchmarks.runs import FailureReason, claim_run, fail_run, finish_run
from backend.services.benchmarks.specs import upsert_spec
from backend.services.slas.definitions import create_sla


def _result(digest: str) -> dict[str, Any]:
    metric = {"metric": "step_time_ms", "unit": "ms", "direction": "lower_is_better"}
    return {
        "status": "succeeded",
        "environment": {"gpu_model": "NVIDIA H200", "device": "cuda"},
        "points": [{"label": "", "params": {}, "metrics": [{**metric, "samples": [1.0, 2.0]}],
                    "hash": digest}],
        "determinism_hash": digest,
        "warnings": [],
    }  # fmt: skip


def _new_run(session: Session, spec_id: int, run_id: str) -> None:
    session.add(BenchmarkRun(id=run_id, spec_id=spec_id))
    session.commit()


def test_determinism_sla_judges_each_run_against_the_last(engine: Engine) -> None:
    with Session(engine) as session:
        spec, _ = upsert_spec(
            session, BenchmarkSpecCreate(name="train", project="p", workload="train_step")
        )
        assert spec.id is not None and spec.branch == "main"
        create_sla(
            session,
            SlaCreate(name="same-hash", project="p", benchmark="train",
                      metric="determinism_hash", rule=Rule.DETERMINISM),
        )  # fmt: skip
        verdicts = []
        for i, digest in enumerate(["a" * 64, "a" * 64, "b" * 64]):
            _new_run(session, spec.id, f"run{i}")
            assert claim_run(session, f"run{i}", "celery@gpu") is not None
            run = finish_run(session, f"run{i}", _result(digest), trace_id=None)
            assert run.status == RunStatus.SUCCEEDED and len(run.metric_run_ids) == 1
            verdicts.append(_verdicts(session, run.metric_run_ids[0]))
    assert verdicts == ["no_data", "pass", "fail"]


def _verdicts(session: Session, metric_run_id: int) -> str:
    from sqlmodel import select

    from backend.models.slas import SlaEvaluation

    row = session.exec(select(SlaEvaluation).where(SlaEvaluation.run_id == metric_run_id)).one()
    return str(row.verdict)


def test_a_redelivered_running_run_is_failed_as_killed_not_rerun(engine: Engine) -> None:
    with Session(engine) as session:
        spec, _ = upsert_spec(session, BenchmarkSpecCreate(name="g", workload="gemm"))
        assert spec.id is not None
        _new_run(session, spec.id, "r1")
        assert claim_run(session, "r1", "celery@a") is not None
        assert claim_run(session, "r1", "celery@b") is None  # redelivery after a worker died
        run = session.get(BenchmarkRun, "r1")
        assert run is not None and run.status == RunStatus.FAILED
        assert run.reason == "killed" and "celery@a" in (run.error or "")
        assert claim_run(session, "r1", "celery@c") is None  # finished runs stay finished
        fail_run(session, "missing", FailureReason.ERROR, "no such run")  # no error


def test_finishing_a_run_twice_stores_its_points_once(engine: Engine) -> None:
    from sqlmodel import func, select

    from backend.models.metrics import MetricPoint

    with Session(engine) as session:
        spec, _ = upsert_spec(session, BenchmarkSpecCreate(name="t", workload="train_step"))
        assert spec.id is not None
        _new_run(session, spec.id, "r1")
        claim_run(session, "r1", "w")
        first = finish_run(session, "r1", _result("c" * 64), None).metric_run_ids
        second = finish_run(session, "r1", _result("c" * 64), None).metric_run_ids
        assert first == second
        assert session.exec(select(func.count()).select_from(MetricPoint)).one() == 2


def test_scheduled_specs_are_queued_once_per_firing(engine: Engine) -> None:
    from datetime import UTC, datetime, timedelta

    from backend.services.benchmarks.specs import enqueue_due_runs, list_runs

    with Session(engine) as session:
        spec, _ = upsert_spec(
            session, BenchmarkSpecCreate(name="nightly", workload="gemm", schedule="0 3 * * *")
        )
        upsert_spec(session, BenchmarkSpecCreate(name="manual", workload="gemm"))
        spec.created_at = datetime(2026, 11, 30, 2, 0, tzinfo=UTC)
        session.add(spec)
        session.commit()
        before = datetime(2026, 11, 30, 2, 59, tzinfo=UTC)
        assert enqueue_due_runs(session, before) == []
        queued = enqueue_due_runs(session, before + timedelta(minutes=2))
        assert len(queued) == 1
        assert enqueue_due_runs(session, before + timedelta(minutes=30)) == []
        runs, count = list_runs(session, name="nightly", limit=10, offset=0)
        assert count == 1 and runs[0].trigger == "schedule" and runs[0].id == queued[0]
