"""`POST /api/v1/metrics` on SQLite and PostgreSQL: auth, storage, idempotency, atomicity."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine
from sqlmodel import Session, func, select

from backend.core.config import get_settings
from backend.models.api_tokens import ApiToken
from backend.models.metrics import MetricPoint, MetricRun
from backend.services.auth.tokens import create_token, hash_token
from tests.factories import native


def _counts(engine: Engine) -> tuple[int, int]:
    with Session(engine) as s:
        runs = s.exec(select(func.count()).select_from(MetricRun)).one()
        points = s.exec(select(func.count()).select_from(MetricPoint)).one()
    return runs, points


def test_push_needs_a_token_with_the_scope(client: TestClient, engine: Engine) -> None:
    assert client.post("/api/v1/metrics", json=native()).status_code == 401
    bad = {"Authorization": "Bearer pd_not-a-token"}
    assert client.post("/api/v1/metrics", json=native(), headers=bad).status_code == 403
    with Session(engine) as session:
        plaintext, row = create_token(session, "reader", ["slas:write"])
        stored = session.exec(select(ApiToken).where(ApiToken.id == row.id)).one()
    assert stored.token_hash == hash_token(plaintext) and plaintext not in stored.model_dump_json()
    wrong = {"Authorization": f"Bearer {plaintext}"}
    assert client.post("/api/v1/metrics", json=native(), headers=wrong).status_code == 403
    assert _counts(engine) == (0, 0)


def test_native_push_stores_points_with_their_statistics(
    client: TestClient, engine: Engine, auth: dict[str, str]
) -> None:
    doc = native(
        points=[
            {"metric": "step_time_ms", "unit": "ms", "samples": [float(i) for i in range(1, 101)]},
            {
                "metric": "tokens_per_s",
                "unit": "1/s",
                "direction": "higher_is_better",
                "value": 41000,
            },
        ],
        timestamp="2026-11-30T10:00:00Z",
        trace_id="abc123",
    )
    response = client.post("/api/v1/metrics", json=doc, headers=auth)
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["format"], body["stored"], body["duplicates"]) == ("native", 2, 0)
    runs = client.get("/api/v1/metrics/runs").json()
    assert runs["count"] == 1
    run = runs["items"][0]
    assert (run["commit"], run["branch"], run["trace_id"]) == ("c0", "main", "abc123")
    assert run["environment"] == {"gpu_model": "H200"}
    step = next(p for p in run["points"] if p["metric"] == "step_time_ms")
    assert (step["n"], step["min"], step["max"], step["p50"]) == (100, 1.0, 100.0, 50.5)
    assert step["p95"] == 95.05 and step["p99"] == 99.01
    tps = next(p for p in run["points"] if p["metric"] == "tokens_per_s")
    assert (tps["direction"], tps["value"], tps["p50"]) == ("higher_is_better", 41000.0, 41000.0)


def test_a_retried_push_stores_once(
    client: TestClient, engine: Engine, auth: dict[str, str]
) -> None:
    first = client.post("/api/v1/metrics", json=native(), headers=auth).json()
    again = client.post("/api/v1/metrics", json=native(), headers=auth).json()
    assert (first["stored"], first["duplicates"]) == (1, 0)
    assert (again["stored"], again["duplicates"]) == (0, 1)
    assert again["runs"] == first["runs"]
    # A retry that adds a metric stores only the new one, in the same run.
    more = native(points=[{"metric": "step_time_ms", "value": 1}, {"metric": "mem", "value": 2}])
    third = client.post("/api/v1/metrics", json=more, headers=auth).json()
    assert (third["stored"], third["duplicates"], third["runs"]) == (1, 1, first["runs"])
    assert _counts(engine) == (1, 2)


def test_a_bad_batch_is_refused_whole_with_json_paths(
    client: TestClient, engine: Engine, auth: dict[str, str]
) -> None:
    points: list[dict[str, Any]] = [{"metric": f"m{i}", "value": i} for i in range(9_999)]
    points[5000]["value"] = "fast"
    points.append({"metric": "x", "samples": [1, None]})
    response = client.post("/api/v1/metrics", json=native(points=points), headers=auth)
    assert response.status_code == 422
    problems = response.json()["detail"]["problems"]
    assert {p["path"] for p in problems} == {"$.points[5000].value", "$.points[9999].samples[1]"}
    assert _counts(engine) == (0, 0)


def test_ten_thousand_points_in_one_push_and_not_one_more(
    client: TestClient, engine: Engine, auth: dict[str, str]
) -> None:
    points = [{"metric": f"m{i}", "value": i} for i in range(10_001)]
    over = client.post("/api/v1/metrics", json=native(points=points), headers=auth)
    assert over.status_code == 422
    assert "limit is 10000" in over.json()["detail"]["message"]
    ok = client.post("/api/v1/metrics", json=native(points=points[:10_000]), headers=auth)
    assert ok.status_code == 200 and ok.json()["stored"] == 10_000
    assert _counts(engine) == (1, 10_000)


def test_missing_fields_come_from_the_query(
    client: TestClient, engine: Engine, auth: dict[str, str]
) -> None:
    doc = native()
    del doc["project"], doc["run_id"], doc["commit"]
    refused = client.post("/api/v1/metrics", json=doc, headers=auth)
    assert refused.status_code == 422
    paths = {p["path"] for p in refused.json()["detail"]["problems"]}
    assert paths == {"$.project", "$.run_id"}
    query = {"project": "llm", "commit": "abc", "run_id": "ci-7"}
    ok = client.post("/api/v1/metrics", json=doc, headers=auth, params=query)
    assert ok.status_code == 200, ok.text
    run = client.get("/api/v1/metrics/runs").json()["items"][0]
    assert (run["project"], run["commit"], run["run_id"]) == ("llm", "abc", "ci-7")


def test_unknown_format_and_undetectable_documents(
    client: TestClient, auth: dict[str, str]
) -> None:
    unknown = client.post("/api/v1/metrics", json=native(), headers=auth, params={"format": "x"})
    assert unknown.status_code == 422 and "unknown format 'x'" in unknown.text
    odd = client.post("/api/v1/metrics", json={"hello": 1}, headers=auth)
    assert odd.status_code == 422 and "cannot tell the format" in odd.text


def test_a_revoked_token_is_refused(client: TestClient, engine: Engine, token: str) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    assert client.post("/api/v1/metrics", json=native(), headers=headers).status_code == 200
    with Session(engine) as session:
        row = session.exec(select(ApiToken).where(ApiToken.token_hash == hash_token(token))).one()
        assert row.last_used_at is not None
        row.revoked_at = row.last_used_at
        session.add(row)
        session.commit()
    again = client.post("/api/v1/metrics", json=native(commit="c1"), headers=headers)
    assert again.status_code == 403 and "revoked" in again.json()["detail"]


def test_webhook_registration_is_checked(
    client: TestClient, auth: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = {"name": "x", "url": "ftp://example.org/hook"}
    response = client.post("/api/v1/webhooks", json=bad, headers=auth)
    assert response.status_code == 422 and "http://" in response.json()["detail"]
    good = {"name": "x", "url": "http://127.0.0.1:9/hook", "secret": "s"}
    refused = client.post("/api/v1/webhooks", json=good, headers=auth)
    assert refused.status_code == 422 and "WEBHOOK_ALLOW_PRIVATE" in refused.json()["detail"]
    monkeypatch.setenv("PERFDASH_WEBHOOK_ALLOW_PRIVATE", "true")  # an on-premise receiver
    get_settings.cache_clear()
    assert client.post("/api/v1/webhooks", json=good, headers=auth).status_code == 201
    assert client.post("/api/v1/webhooks", json=good, headers=auth).status_code == 422
    listed = client.get("/api/v1/webhooks").json()
    assert [h["name"] for h in listed] == ["x"] and "secret" not in listed[0]
    assert client.delete(f"/api/v1/webhooks/{listed[0]['id']}").status_code == 401
