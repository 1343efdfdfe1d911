"""A/A runs: `repeat` on a run request and a spec's `aa_repeats` queue one batch of runs
of one ref, whose metric documents carry the batch as `environment.aa_group`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi.testclient import TestClient
from sqlmodel import Session

from backend.core.db import get_engine
from backend.models.benchmarks import BenchmarkRun, RunStatus
from backend.services.benchmarks.aa import batch_state, top_up
from backend.services.benchmarks.runs import metric_document
from backend.services.benchmarks.specs import enqueue_due_runs, get_run, get_spec

SPEC: dict[str, Any] = {"name": "gemm-aa", "workload": "gemm", "params": {"dtype": "bf16"}}


def test_repeat_queues_one_aa_batch_and_refuses_past_its_limit(client: TestClient) -> None:
    assert client.post("/api/v1/benchmarks", json=SPEC).status_code == 200
    response = client.post("/api/v1/benchmarks/gemm-aa/runs", json={"repeat": 3})
    assert response.status_code == 202, response.text
    first = response.json()
    assert len(first["queued"]) == 3 and first["queued"][0] == first["id"]
    runs = client.get("/api/v1/benchmarks/gemm-aa/runs").json()
    assert runs["count"] == 3
    assert {r["id"] for r in runs["items"]} == set(first["queued"])
    assert {(r["trigger"], r["status"], r["aa_group"]) for r in runs["items"]} == {
        ("aa", "queued", first["aa_group"])
    }
    assert len(first["aa_group"]) == 32
    single = client.post("/api/v1/benchmarks/gemm-aa/runs").json()
    assert (single["trigger"], single["aa_group"], single["queued"]) == ("api", "", [single["id"]])

    for repeat in (0, 51, -1, "three", 2.5):
        refused = client.post("/api/v1/benchmarks/gemm-aa/runs", json={"repeat": repeat})
        assert refused.status_code == 422, (repeat, refused.text)
        assert refused.json()["detail"][0]["loc"] == ["body", "repeat"]
    assert client.get("/api/v1/benchmarks/gemm-aa/runs").json()["count"] == 4

    with Session(get_engine()) as session:
        run, spec = get_run(session, first["id"])
        result = {"points": [], "environment": {"gpu_model": "H200"}}
        env = metric_document(spec, run, result, None)["environment"]
    assert env == {"gpu_model": "H200", "aa_group": first["aa_group"]}


def test_aa_repeats_on_a_schedule(client: TestClient) -> None:
    nightly = {**SPEC, "name": "nightly-aa", "schedule": "0 3 * * *", "aa_repeats": 4}
    assert client.post("/api/v1/benchmarks", json=nightly).status_code == 200
    too_many = client.post("/api/v1/benchmarks", json={**nightly, "aa_repeats": 51})
    assert too_many.status_code == 422 and "aa_repeats" in too_many.text
    with Session(get_engine()) as session:
        spec = get_spec(session, "nightly-aa")
        spec.created_at = datetime(2026, 11, 30, 2, 0, tzinfo=UTC)
        session.add(spec)
        session.commit()
        queued = enqueue_due_runs(session, datetime(2026, 11, 30, 3, 1, tzinfo=UTC))
        assert (
            enqueue_due_runs(
                session, datetime(2026, 11, 30, 3, 1, tzinfo=UTC) + timedelta(minutes=5)
            )
            == []
        )
    runs = client.get("/api/v1/benchmarks/nightly-aa/runs").json()["items"]
    assert sorted(r["id"] for r in runs) == sorted(queued) and len(queued) == 4
    assert len({r["aa_group"] for r in runs}) == 1 and {r["trigger"] for r in runs} == {"aa"}


THROTTLED = [{"flag": "throttled", "gpu": 0, "reason": "sw_power_cap", "detail": "at the cap"}]


def _end(session: Session, run_id: str, status: RunStatus, flags: list[Any] | None = None) -> None:
    """What the runner's outcome leaves on the row: a status, and the flags it measured."""
    run = session.get(BenchmarkRun, run_id)
    assert run is not None
    run.status, run.environment = status, {"flags": flags or []}
    run.reason = "killed" if status == RunStatus.FAILED else None
    session.add(run)
    session.commit()


def test_flagged_and_failed_aa_runs_are_replaced_until_the_budget_runs_out(
    client: TestClient,
) -> None:
    """--repeat 3 with a budget of 2 extra runs: each unusable run is replaced while runs
    in flight cannot make up the batch, and the batch says when the budget is spent."""
    assert client.post("/api/v1/benchmarks", json=SPEC).status_code == 200
    first = client.post("/api/v1/benchmarks/gemm-aa/runs", json={"repeat": 3}).json()
    ids, group = first["queued"], first["aa_group"]
    batch = client.get(f"/api/v1/benchmark-runs/{ids[0]}/aa-batch").json()
    assert (batch["state"], batch["target"], batch["pending"]) == ("running", 3, 3)
    with Session(get_engine()) as session:
        _end(session, ids[0], RunStatus.SUCCEEDED, THROTTLED)
        (retry1,) = top_up(session, ids[0], budget=2)  # 0 usable + 2 in flight < 3
        assert (retry1.trigger, retry1.aa_group) == ("aa_retry", group)
        _end(session, ids[1], RunStatus.SUCCEEDED)
        assert top_up(session, ids[1], budget=2) == []  # 1 usable + 2 in flight: enough
        _end(session, ids[2], RunStatus.FAILED)
        (retry2,) = top_up(session, ids[2], budget=2)
        _end(session, retry1.id, RunStatus.SUCCEEDED)
        _end(session, retry2.id, RunStatus.SUCCEEDED, THROTTLED)
        assert top_up(session, retry2.id, budget=2) == []  # the budget of 2 is spent
        state = batch_state(session, group, 2)
    assert (state.state, state.target, state.usable, state.extra) == ("budget_spent", 3, 2, 2)
    assert state.message.startswith("2 of 3 usable runs after 5 runs: 3 left out")
    assert "budget of 2 extra runs" in state.message
    why = {r["id"]: r["why"] for r in state.runs}
    assert why[ids[2]] == "failed (killed)" and why[retry1.id] is None
    assert why[ids[0]] == "flagged throttled (GPU 0, sw_power_cap)"


def test_an_aa_batch_is_complete_once_n_runs_are_usable(client: TestClient) -> None:
    assert client.post("/api/v1/benchmarks", json=SPEC).status_code == 200
    first = client.post("/api/v1/benchmarks/gemm-aa/runs", json={"repeat": 2}).json()
    with Session(get_engine()) as session:
        for run_id in first["queued"]:
            _end(session, run_id, RunStatus.SUCCEEDED)
            assert top_up(session, run_id, budget=5) == []
    batch = client.get(f"/api/v1/benchmark-runs/{first['id']}/aa-batch").json()
    assert (batch["state"], batch["usable"], batch["extra"]) == ("complete", 2, 0)
    single = client.post("/api/v1/benchmarks/gemm-aa/runs").json()
    assert client.get(f"/api/v1/benchmark-runs/{single['id']}/aa-batch").status_code == 404
