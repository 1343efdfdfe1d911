"""The benchmark spec, run and runner API on SQLite and PostgreSQL (no worker needed)."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlmodel import Session

from backend.core.db import get_engine
from backend.services.auth.tokens import create_token
from backend.services.benchmarks.runners import register_runner

GEMM: dict[str, Any] = {
    "name": "gemm-bf16",
    "workload": "gemm",
    "params": {"dtype": "bf16"},
    "sweep": {"m": [256, 512]},
    "schedule": "0 3 * * *",
}


def test_spec_crud_and_diff(client: TestClient) -> None:
    created = client.post("/api/v1/benchmarks", json=GEMM)
    assert created.status_code == 200, created.text
    assert created.json() == {"name": "gemm-bf16", "action": "created", "changes": {}}
    assert client.post("/api/v1/benchmarks", json=GEMM).json()["action"] == "unchanged"
    changed = client.post("/api/v1/benchmarks", json={**GEMM, "iters": 50}).json()
    assert changed["action"] == "updated"
    assert changed["changes"] == {"iters": [20, 50]}

    spec = client.get("/api/v1/benchmarks/gemm-bf16").json()
    assert spec["queue"] == "gpu" and len(spec["spec_hash"]) == 64
    listed = client.get("/api/v1/benchmarks").json()
    assert [s["name"] for s in listed["items"]] == ["gemm-bf16"]
    assert listed["items"][0]["last_run"] is None

    assert client.delete("/api/v1/benchmarks/gemm-bf16").status_code == 204
    assert client.get("/api/v1/benchmarks/gemm-bf16").status_code == 404


def test_spec_hash_follows_what_is_measured(client: TestClient) -> None:
    client.post("/api/v1/benchmarks", json=GEMM)
    before = client.get("/api/v1/benchmarks/gemm-bf16").json()["spec_hash"]
    client.post("/api/v1/benchmarks", json={**GEMM, "description": "docs only"})
    assert client.get("/api/v1/benchmarks/gemm-bf16").json()["spec_hash"] == before
    client.post("/api/v1/benchmarks", json={**GEMM, "seed": 7})
    assert client.get("/api/v1/benchmarks/gemm-bf16").json()["spec_hash"] != before


def test_settle_is_stored_and_counts_in_the_hash(client: TestClient) -> None:
    client.post("/api/v1/benchmarks", json=GEMM)
    plain = client.get("/api/v1/benchmarks/gemm-bf16").json()
    assert plain["settle"] is None
    changed = client.post("/api/v1/benchmarks", json={**GEMM, "settle": True}).json()
    assert changed["changes"] == {"settle": [None, {}]}
    settled = client.get("/api/v1/benchmarks/gemm-bf16").json()
    assert settled["settle"] == {} and settled["spec_hash"] != plain["spec_hash"]
    client.post("/api/v1/benchmarks", json={**GEMM, "settle": {"max_temp_c": 45}})
    custom = client.get("/api/v1/benchmarks/gemm-bf16").json()
    assert custom["settle"] == {"max_temp_c": 45.0}
    assert custom["spec_hash"] not in (plain["spec_hash"], settled["spec_hash"])
    client.post("/api/v1/benchmarks", json={**GEMM, "settle": False})
    assert client.get("/api/v1/benchmarks/gemm-bf16").json()["spec_hash"] == plain["spec_hash"]


def test_bad_specs_are_refused_with_the_reason(client: TestClient) -> None:
    cases = [
        ({**GEMM, "workload": "nope"}, "workload must be one of"),
        ({**GEMM, "name": "has space"}, "letters, digits"),
        ({**GEMM, "sweep": {"m": []}}, "non-empty list"),
        ({**GEMM, "sweep": {"a": list(range(20)), "b": list(range(20))}}, "limit is 256"),
        ({**GEMM, "schedule": "61 * * * *"}, "outside 0-59"),
        ({**GEMM, "kind": "callable", "workload": "no spaces"}, "package.module:function"),
        ({**GEMM, "timeout_s": 99999}, "less than or equal"),
        ({**GEMM, "settle": {"max_temp": 40}}, "settle.max_temp: unknown option"),
        (
            {**GEMM, "settle": {"steady_timeout_s": 601}},
            "settle.steady_timeout_s must be a number from 0 to 600",
        ),
        ({**GEMM, "settle": {"window_s": None}}, "settle.window_s must be a number"),
        ({**GEMM, "settle": "always"}, "settle is true, false, or a mapping"),
        ({**GEMM, "settle": {"clock_tolerance": "x" * 100_000}}, "settle.clock_tolerance"),
    ]
    for body, message in cases:
        response = client.post("/api/v1/benchmarks", json=body)
        assert response.status_code == 422, body
        assert message in response.text, response.text
    assert client.get("/api/v1/benchmarks").json()["count"] == 0


def test_command_specs_need_an_admin_token(client: TestClient) -> None:
    spec = {"name": "cmd", "kind": "command", "command": ["./bench", "--json"]}
    assert client.post("/api/v1/benchmarks", json=spec).status_code == 401
    with Session(get_engine()) as session:
        writer, _ = create_token(session, "ci", ["metrics:write"])
        admin, _ = create_token(session, "root", ["admin"])
    denied = client.post(
        "/api/v1/benchmarks", json=spec, headers={"Authorization": f"Bearer {writer}"}
    )
    assert denied.status_code == 403
    install = {**GEMM, "install": "git+https://example.invalid/pkg@{ref}"}
    assert client.post("/api/v1/benchmarks", json=install).status_code == 401
    ok = client.post("/api/v1/benchmarks", json=spec, headers={"Authorization": f"Bearer {admin}"})
    assert ok.status_code == 200, ok.text


def test_request_run_queues_a_row(client: TestClient) -> None:
    client.post("/api/v1/benchmarks", json=GEMM)
    response = client.post("/api/v1/benchmarks/gemm-bf16/runs")
    assert response.status_code == 202, response.text
    run = response.json()
    assert run["status"] == "queued" and run["spec_name"] == "gemm-bf16"
    assert client.get(f"/api/v1/benchmark-runs/{run['id']}").json()["id"] == run["id"]
    assert client.get("/api/v1/benchmarks/gemm-bf16/runs").json()["count"] == 1
    assert client.get("/api/v1/benchmark-runs").json()["items"][0]["id"] == run["id"]
    last = client.get("/api/v1/benchmarks").json()["items"][0]["last_run"]
    assert last["id"] == run["id"]
    at_ref = client.post("/api/v1/benchmarks/gemm-bf16/runs", json={"ref": "abc123"})
    assert at_ref.status_code == 422 and "no install hook" in at_ref.text
    assert client.post("/api/v1/benchmarks/missing/runs").status_code == 404
    assert client.get("/api/v1/benchmark-runs/nope").status_code == 404


def test_runners_list_live_ones(client: TestClient) -> None:
    with Session(get_engine()) as session:
        register_runner(
            session,
            name="celery@gpu1",
            hostname="gpu1",
            queues=["gpu"],
            capabilities={"gpus": [{"name": "NVIDIA H200"}]},
        )
    runners = client.get("/api/v1/runners", params={"live": True}).json()
    assert runners["count"] == 1
    assert runners["items"][0]["live"] is True
    assert runners["items"][0]["capabilities"]["gpus"][0]["name"] == "NVIDIA H200"
