"""A/A runs: `repeat` on a run request and a spec's `aa_repeats` queue one batch of runs
of one ref, whose metric documents carry the batch as `environment.aa_group`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi.testclient import TestClient
from sqlmodel import Session

from backend.core.db import get_engine
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
