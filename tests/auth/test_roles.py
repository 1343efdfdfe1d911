"""Who may do what over the API: each role and each token scope against every kind of write.

Each test takes one caller through every action on a fresh database and compares the
whole outcome table, so a permission that leaks or goes missing shows as one diff.
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine
from sqlmodel import Session

from backend.core.config import get_settings
from backend.models.benchmarks import BenchmarkSpecCreate
from backend.services.auth.tokens import create_token
from backend.services.benchmarks.specs import upsert_spec
from backend.services.traces.lifecycle import accept_upload
from tests.auth.conftest import MakeClient, csrf_header, sign_in, upload
from tests.factories import native, token_headers

GEMM: dict[str, Any] = {"name": "gemm-bf16", "workload": "gemm", "sweep": {"m": [256]}}
SLA = {"project": "llm", "benchmark": "train", "metric": "step_time_ms", "threshold": 12}
WEBHOOK = {"url": "http://127.0.0.1:9/hook"}
COMMAND_SPEC = {"name": "cmd", "kind": "command", "command": ["./bench", "--json"]}
CALLABLE_SPEC = {"name": "fn", "kind": "callable", "workload": "logging.config:fileConfig"}

Action = Callable[[TestClient, dict[str, str], str], int]
ACTIONS: dict[str, Action] = {
    "read": lambda c, h, _t: c.get("/api/v1/traces", headers=h).status_code,
    "upload": lambda c, h, _t: upload(c, h, uuid.uuid4().hex.encode()).status_code,
    "delete": lambda c, h, t: c.delete(f"/api/v1/traces/{t}", headers=h).status_code,
    "run benchmark": lambda c, h, _t: (
        c.post("/api/v1/benchmarks/gemm-bf16/runs", headers=h).status_code
    ),
    "change spec": lambda c, h, _t: (
        c.post("/api/v1/benchmarks", json={**GEMM, "iters": 7}, headers=h).status_code
    ),
    "command spec": lambda c, h, _t: (
        c.post("/api/v1/benchmarks", json=COMMAND_SPEC, headers=h).status_code
    ),
    "callable spec": lambda c, h, _t: (
        c.post("/api/v1/benchmarks", json=CALLABLE_SPEC, headers=h).status_code
    ),
    "change SLA": lambda c, h, _t: (
        c.post("/api/v1/slas", json={**SLA, "name": uuid.uuid4().hex}, headers=h).status_code
    ),
    "change webhook": lambda c, h, _t: (
        c.post(
            "/api/v1/webhooks", json={**WEBHOOK, "name": uuid.uuid4().hex}, headers=h
        ).status_code
    ),
    "push metrics": lambda c, h, _t: (
        c.post("/api/v1/metrics", json=native(), headers=h).status_code
    ),
    "read webhook log": lambda c, h, _t: (
        c.get("/api/v1/webhooks/1/deliveries", headers=h).status_code
    ),
}
ALLOWED = {
    "read": 200, "upload": 202, "delete": 204, "run benchmark": 202, "change spec": 200,
    "command spec": 200, "callable spec": 200, "change SLA": 201, "change webhook": 201,
    "push metrics": 200, "read webhook log": 200,
}  # fmt: skip


def _expect(allowed: set[str], refused: int = 403) -> dict[str, int]:
    return {action: ALLOWED[action] if action in allowed else refused for action in ACTIONS}


ROLE_CAN = {
    "viewer": {"read"},
    "uploader": {"read", "upload", "run benchmark"},
    "admin": set(ACTIONS) - {"push metrics"},  # metric pushes come from CI tokens only
}
SCOPE_CAN = {
    "traces:write": {"read", "upload", "delete"},
    "bench:run": {"read", "run benchmark"},
    "benchmarks:write": {"read", "change spec"},
    "metrics:write": {"read", "push metrics"},
    "slas:write": {"read", "change SLA"},
    "webhooks:write": {"read", "change webhook", "read webhook log"},
    "admin": set(ACTIONS),
}


@pytest.fixture
def world(engine: Engine, users: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> str:
    """A ready-made spec to run and a trace to delete; returns the trace id. WEBHOOK is a
    loopback receiver, so the clients' settings allow private webhook targets."""
    monkeypatch.setenv("PERFDASH_WEBHOOK_ALLOW_PRIVATE", "true")
    with Session(engine) as db:
        upsert_spec(db, BenchmarkSpecCreate.model_validate(GEMM))
        trace, _ = accept_upload(
            session=db, settings=get_settings(), stream=io.BytesIO(b"{}"), name="t", project="p"
        )
    return trace.id


def _outcomes(client: TestClient, headers: dict[str, str], trace_id: str) -> dict[str, int]:
    return {name: action(client, headers, trace_id) for name, action in ACTIONS.items()}


@pytest.mark.parametrize("role", sorted(ROLE_CAN))
def test_what_each_role_may_do(make_client: MakeClient, world: str, role: str) -> None:
    client = make_client("password")
    assert sign_in(client, role).status_code == 303
    assert _outcomes(client, csrf_header(client), world) == _expect(ROLE_CAN[role])


@pytest.mark.parametrize("auth", ["password", "off"])
@pytest.mark.parametrize("scope", sorted(SCOPE_CAN))
def test_what_each_token_scope_may_do(
    make_client: MakeClient, engine: Engine, world: str, scope: str, auth: str
) -> None:
    client = make_client(auth)
    headers = token_headers(engine, scope, name="ci")  # no CSRF token: none is needed
    assert _outcomes(client, headers, world) == _expect(SCOPE_CAN[scope])


def test_anonymous_callers_reach_nothing_with_auth_on(make_client: MakeClient, world: str) -> None:
    client = make_client("password")
    assert _outcomes(client, {}, world) == _expect(set(), refused=401)


def test_with_auth_off_anonymous_callers_keep_what_they_had(
    make_client: MakeClient, world: str
) -> None:
    client = make_client("off")
    anonymous = {"read", "upload", "delete", "run benchmark", "change spec"}
    assert _outcomes(client, {}, world) == _expect(anonymous, refused=401)


def test_refusals_say_what_is_missing(make_client: MakeClient, world: str, engine: Engine) -> None:
    client = make_client("password")
    sign_in(client, "viewer")
    refused = upload(client, csrf_header(client))
    assert refused.json()["detail"] == (
        "to upload a trace the uploader role is needed; user 'viewer' is a viewer"
    )
    pushed = client.post("/api/v1/metrics", json=native(), headers=csrf_header(client))
    assert "use an API token with 'metrics:write'" in pushed.json()["detail"]
    token = make_client("password").post(
        "/api/v1/traces",
        files={"file": ("t.json", b"{}")},
        headers=token_headers(engine, "metrics:write", name="ci"),
    )
    assert token.status_code == 403 and "lacks the 'traces:write' scope" in token.json()["detail"]


@pytest.mark.parametrize("auth", ["password", "off"])
def test_unknown_or_revoked_tokens_are_refused_in_every_mode(
    make_client: MakeClient, engine: Engine, auth: str
) -> None:
    from backend.services.auth.tokens import revoke_token

    client = make_client(auth)
    with Session(engine) as db:
        plaintext, row = create_token(db, "ci", ["traces:write"])
        revoke_token(db, str(row.id))
    for token in (plaintext, "pd_not-a-token"):
        response = client.get("/api/v1/traces", headers={"Authorization": f"Bearer {token}"})
        assert response.status_code == 403 and "unknown or revoked" in response.text
