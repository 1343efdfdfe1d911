"""Bisects in the database, without a worker: the regression hook, the refusals, the
optimistic lock, the bisect branch of the runs' metrics, the webhook when one ends.

Runs are finished here by writing the results a runner would report (`finish_run`, the
task's own call), so each step of the state machine is driven by hand.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from fastapi.testclient import TestClient
from sqlalchemy import inspect
from sqlalchemy.engine import Engine
from sqlmodel import Session, SQLModel, col, select

from backend.core.config import Settings
from backend.core.migrate import alembic_config
from backend.core.task_names import runner_queue
from backend.models.benchmarks import BenchmarkRun, BenchmarkSpecCreate, WorkloadKind
from backend.models.bisects import Bisect, BisectCreate, BisectStatus
from backend.models.metrics import MetricRun
from backend.models.outbox import OutboxMessage
from backend.models.slas import Rule, SlaCreate, SlaEvaluation
from backend.models.webhooks import WebhookCreate, WebhookDelivery
from backend.services.auth.tokens import create_token
from backend.services.benchmarks.bisect import advance, advance_for_run, start_bisect, store_commits
from backend.services.benchmarks.runners import register_runner
from backend.services.benchmarks.runs import claim_run, finish_run
from backend.services.benchmarks.specs import upsert_spec
from backend.services.errors import InvalidInputError
from backend.services.slas.definitions import create_sla
from backend.services.slas.webhooks import create_webhook

RUNNER = "celery@gpu-1"
HOOK = "git+https://example.invalid/org/model@{ref}"


def _spec(session: Session, name: str = "model", install: str | None = HOOK) -> None:
    upsert_spec(
        session,
        BenchmarkSpecCreate(
            name=name, project="p", kind=WorkloadKind.CALLABLE, workload="m:f", install=install
        ),
    )


def _runner(session: Session) -> None:
    register_runner(session, name=RUNNER, hostname="gpu-1", queues=["gpu"], capabilities={})


def _result(ms: float) -> dict[str, Any]:
    samples = [ms * (1 + 0.001 * i) for i in range(8)]
    metric = {"metric": "step_ms", "unit": "ms", "direction": "lower_is_better"}
    point = {"label": "", "params": {}, "metrics": [{**metric, "samples": samples}]}
    return {"status": "succeeded", "environment": {}, "warnings": [], "points": [point]}


def _finish(session: Session, bisect_id: str, ms_of: dict[str, float]) -> None:
    """Finish every queued run of the bisect as the runner would, at ms_of[ref]."""
    bisect = session.get(Bisect, bisect_id)
    assert bisect is not None
    for ref, run_ids in dict(bisect.runs).items():
        for run_id in run_ids:
            if claim_run(session, run_id, RUNNER) is not None:
                finish_run(session, run_id, _result(ms_of[ref]), None)
                advance_for_run(session, run_id)


def _queued(session: Session) -> list[OutboxMessage]:
    return list(session.exec(select(OutboxMessage)))


def test_refusals_say_what_is_wrong(engine: Engine) -> None:
    with Session(engine) as session:
        _spec(session, "plain", install=None)
        _spec(session, "model")
        body = BisectCreate(good="a", bad="b", metric="step_ms")
        with pytest.raises(InvalidInputError, match="no install hook"):
            start_bisect(session, "plain", body)
        with pytest.raises(InvalidInputError, match="no live runner consumes queue 'gpu'"):
            start_bisect(session, "model", body)
        _runner(session)
        with pytest.raises(InvalidInputError, match="budget 5 cannot pay"):
            start_bisect(session, "model", body.model_copy(update={"budget": 5}))
        with pytest.raises(InvalidInputError, match="the same ref"):
            start_bisect(session, "model", body.model_copy(update={"bad": "a"}))
        start_bisect(session, "model", body)
        with pytest.raises(InvalidInputError, match="already open"):
            start_bisect(session, "model", body)


PAST_LIMITS: list[tuple[str, object]] = [
    ("good", "--upload-pack=touch /tmp/x"), ("bad", "a..b"), ("good", ""), ("bad", "x" * 300),
    ("metric", ""), ("repeats", 1), ("repeats", 11), ("budget", 201), ("margin_pct", -1),
]  # fmt: skip


def test_the_route_refuses_bodies_past_their_limits(client: TestClient, engine: Engine) -> None:
    with Session(engine) as session:
        _spec(session)
        _runner(session)
    for field, value in PAST_LIMITS:
        body = {"good": "a1", "bad": "b2", "metric": "step_ms", field: value}
        answer = client.post("/api/v1/benchmarks/model/bisects", json=body)
        assert answer.status_code == 422 and field in answer.text, (field, value, answer.text)
    with Session(engine) as session:
        assert session.exec(select(Bisect)).first() is None


def test_unknown_spec_and_bisect_are_404(client: TestClient) -> None:
    body = {"good": "a1", "bad": "b2", "metric": "step_ms"}
    assert client.post("/api/v1/benchmarks/nope/bisects", json=body).status_code == 404
    assert client.get("/api/v1/bisects/nope").status_code == 404


def test_a_regression_verdict_starts_a_bisect_pinned_to_a_runner(
    engine: Engine, client: TestClient
) -> None:
    now = datetime.now(UTC)
    with Session(engine) as session:
        _spec(session)
        _runner(session)
        create_sla(
            session,
            SlaCreate(name="model-speed", project="p", benchmark="model", metric="step_ms",
                      rule=Rule.REGRESSION, tolerance_pct=5.0),
        )  # fmt: skip
        token, _ = create_token(session, "ci", ["metrics:write"])
    for i, ms in enumerate([10.0, 10.0, 10.0, 10.0, 20.0]):
        doc = {"project": "p", "benchmark": "model", "commit": f"a{i}", "branch": "main",
               "run_id": f"ci-{i}", "timestamp": (now - timedelta(minutes=5 - i)).isoformat(),
               "points": _result(ms)["points"][0]["metrics"]}  # fmt: skip
        pushed = client.post(
            "/api/v1/metrics", json=doc, headers={"Authorization": f"Bearer {token}"}
        )
        assert pushed.status_code == 200, pushed.text
    assert [v["verdict"] for v in pushed.json()["verdicts"]] == ["fail"]
    with Session(engine) as session:
        bisect = session.exec(select(Bisect)).one()
        assert (bisect.good, bisect.bad, bisect.trigger) == ("a3", "a4", "sla")
        assert (bisect.metric, bisect.margin_pct, bisect.runner) == ("step_ms", 5.0, RUNNER)
        assert bisect.sla_id is not None and bisect.status == BisectStatus.CONFIRMING
        # Nothing runs before the runner has found the pushed commits on an allowed branch.
        assert bisect.runs == {} and session.exec(select(BenchmarkRun)).first() is None
        note = {"status": "checking", "id": bisect.id}
        assert pushed.json()["verdicts"][0]["details"]["bisect"] == note
        store_commits(session, bisect.id, ["a4"])
        session.refresh(bisect)
        assert list(bisect.runs) == ["a3", "a4"] and len(bisect.runs["a3"]) == 3
        runs = session.exec(select(BenchmarkRun)).all()
        assert {r.trigger for r in runs} == {"bisect"} and len(runs) == 6
        stored = session.exec(select(SlaEvaluation).where(SlaEvaluation.commit == "a4")).one()
        assert stored.details["bisect"] == {"status": "started", "id": bisect.id}
        # Without git on the runner, the commits pushed to the series between good and bad.
        bisect.status = BisectStatus.FAILED
        session.add(bisect)
        session.commit()
        wider = start_bisect(session, "model", BisectCreate(good="a1", bad="a4", metric="step_ms"))
        store_commits(session, wider.id, None, "git: could not read from remote repository")
        session.refresh(wider)
        assert (wider.commits, wider.commits_source) == (["a1", "a2", "a3", "a4"], "series")


def test_a_bisect_advances_once_and_reports_when_found(engine: Engine, client: TestClient) -> None:
    chain = ["g", "c1", "c2", "c3", "b"]  # c2 is where it got slower
    ms_of = {"g": 10.0, "c1": 10.0, "c2": 20.0, "c3": 20.0, "b": 20.0}
    with Session(engine) as session:
        _spec(session)
        _runner(session)
        hook = WebhookCreate(name="team", url="http://127.0.0.1:9/hook")
        create_webhook(session, hook, allow_private=True)
        bisect = start_bisect(session, "model", BisectCreate(good="g", bad="b", metric="step_ms"))
        # No run is queued until the runner has checked the refs and stored the commits.
        assert session.exec(select(BenchmarkRun)).first() is None
        store_commits(session, bisect.id, ["c1", "c2", "c3", "b-full-hash"])
        queues = {m.queue for m in _queued(session)}
        # Everything went to the runner's own queue: the list task and six runs, A B A B.
        assert queues <= {runner_queue(RUNNER)}
        runs = session.exec(select(BenchmarkRun).order_by(col(BenchmarkRun.created_at))).all()
        assert [r.ref for r in runs] == ["g", "b"] * 3
        _finish(session, bisect.id, ms_of)
        session.refresh(bisect)
        assert (bisect.commits, str(bisect.status)) == (chain, "bisecting")
        assert list(bisect.runs) == ["g", "b", "c2"]
        version = bisect.version
        advance(session, bisect.id)  # nothing finished: nothing new
        session.refresh(bisect)
        assert bisect.version == version and len(bisect.runs["c2"]) == 1
        # The probe's metrics went to the bisect branch, away from the baseline series.
        _finish(session, bisect.id, ms_of)
        branches = set(session.exec(select(MetricRun.branch)).all())
        assert branches == {"bisect/main"}
        session.refresh(bisect)
        assert list(bisect.runs) == ["g", "b", "c2", "c1"]
        _finish(session, bisect.id, ms_of)
        session.refresh(bisect)
        assert (bisect.status, bisect.last_good, bisect.first_bad) == ("found", "c1", "c2")
        delivery = session.exec(select(WebhookDelivery)).one()
        assert delivery.event == "bisect"
        assert delivery.payload["bisect"]["first_bad"] == "c2"
        assert delivery.payload["links"]["bisect"] == f"/api/v1/bisects/{bisect.id}"
        # With profiler traces on the last good and first bad runs: the compare page.
        for ref, trace in (("c1", "t-good"), ("c2", "t-bad")):
            run = session.get(BenchmarkRun, bisect.runs[ref][0])
            assert run is not None
            run.trace_id = trace
            session.add(run)
        session.commit()
        bisect_id = bisect.id
    shown = client.get(f"/api/v1/bisects/{bisect_id}").json()
    assert [(s["ref"], s["verdict"]) for s in shown["steps"]] == [
        ("g", "good"), ("c1", "good"), ("c2", "bad"), ("b", "bad")]  # fmt: skip
    assert shown["runs_used"] == 8 and shown["trace_diff"] == "/compare?a=t-good&b=t-bad"


def test_a_stale_advance_loses_the_race(engine: Engine) -> None:
    from backend.services.benchmarks.bisect import _apply
    from backend.services.benchmarks.bisect_plan import Plan

    with Session(engine) as session:
        _spec(session)
        _runner(session)
        bisect = start_bisect(session, "model", BisectCreate(good="g", bad="b", metric="step_ms"))
        stale = Bisect.model_validate(bisect.model_dump())
        stale.version -= 1
        assert not _apply(session, stale, Plan(BisectStatus.FAILED, error="x"), {})
        session.refresh(bisect)
        assert bisect.status == BisectStatus.CONFIRMING


def test_the_migration_matches_the_model_and_downgrades(engine: Engine, settings: Settings) -> None:
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        diff = compare_metadata(context, SQLModel.metadata)
    assert [d for d in diff if "bisects" in str(d)] == []
    config = alembic_config(settings.resolved_database_url)
    command.downgrade(config, "0016")
    engine.dispose()
    assert "bisects" not in inspect(engine).get_table_names()
    command.upgrade(config, "head")
    engine.dispose()
    assert "bisects" in inspect(engine).get_table_names()
