"""Regressions and baselines on a CI-like series: 30 pushes, a 15% step up at push 12.

Every verdict after the step names push 12's commit as the first bad commit, as the
series does; the relative baseline stays at the old level until someone accepts the new
one, and then is the new level. Expected numbers come from `statistics` over the pushed
samples, never from perfdash code.
"""

from __future__ import annotations

import hashlib
import random
import statistics
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from fastapi.testclient import TestClient
from sqlalchemy import inspect
from sqlalchemy.engine import Engine
from sqlmodel import SQLModel

from backend.core.config import Settings
from backend.core.migrate import alembic_config
from tests.factories import post_metrics, post_sla, token_headers

PUSHES = 30
STEP_AT = 12  # 1-based: push 12 is the first at the new level
SAMPLES = 9  # odd, so every median definition agrees
TOLERANCE = 5.0
BASELINE_RUNS = 10


def _sha(i: int) -> str:
    return hashlib.sha1(f"commit {i}".encode()).hexdigest()


def _samples(rng: random.Random, i: int) -> list[float]:
    mean = 100.0 if i < STEP_AT else 115.0
    return [round(rng.gauss(mean, 1.0), 3) for _ in range(SAMPLES)]


class Series:
    """Pushes through the API, remembering each push's samples and answer."""

    def __init__(self, client: TestClient, auth: dict[str, str]) -> None:
        self.client, self.auth = client, auth
        self.rng = random.Random(20)
        self.samples: dict[int, list[float]] = {}
        self.verdicts: dict[int, dict[str, dict[str, Any]]] = {}

    def push(self, i: int) -> dict[str, dict[str, Any]]:
        self.samples[i] = _samples(self.rng, i)
        body = post_metrics(
            self.client,
            self.auth,
            commit=_sha(i),
            run_id=f"ci-{i}",
            timestamp=f"2026-11-01T{i // 60:02d}:{i % 60:02d}:00Z",
            points=[{"metric": "step_time_ms", "unit": "ms", "samples": self.samples[i]}],
        )
        self.verdicts[i] = {v["name"]: v for v in body["verdicts"]}
        return self.verdicts[i]

    def median_of(self, pushes: range) -> float:
        return statistics.median(statistics.median(self.samples[i]) for i in pushes)


def _slas(client: TestClient, auth: dict[str, str]) -> dict[str, str]:
    rules: dict[str, dict[str, Any]] = {
        "reg": {"rule": "regression", "tolerance_pct": TOLERANCE},
        "rel": {"rule": "relative", "tolerance_pct": TOLERANCE},
        "abs": {"threshold": 1000},
    }
    return {
        name: post_sla(client, auth, name=name, baseline_runs=BASELINE_RUNS, **fields)["id"]
        for name, fields in rules.items()
    }


def _series(client: TestClient) -> dict[str, Any]:
    params = {"project": "llm", "benchmark": "train", "metric": "step_time_ms"}
    body: dict[str, Any] = client.get("/api/v1/metrics/series", params=params).json()
    return body


def _pushed(client: TestClient, auth: dict[str, str]) -> Series:
    series = Series(client, auth)
    for i in range(1, PUSHES + 1):
        series.push(i)
    return series


def test_every_verdict_after_a_step_names_where_it_began(
    client: TestClient, auth: dict[str, str]
) -> None:
    _slas(client, auth)
    series = _pushed(client, auth)
    after = range(STEP_AT + 1, PUSHES + 1)
    named = {series.verdicts[i]["reg"]["details"].get("first_bad_commit") for i in after}
    assert named == {_sha(STEP_AT)}
    assert all(series.verdicts[i]["reg"]["verdict"] == "fail" for i in after)
    assert series.verdicts[STEP_AT]["reg"]["details"]["first_bad_commit"] == _sha(STEP_AT)

    shown = _series(client)
    assert [(c["commit"], c["worse"]) for c in shown["change_points"]] == [(_sha(STEP_AT), True)]
    assert {s["name"]: s["first_bad_commit"] for s in shown["slas"]} == {
        "abs": None,
        "reg": _sha(STEP_AT),
        "rel": None,
    }


def test_the_relative_baseline_does_not_drift_to_a_regression(
    client: TestClient, auth: dict[str, str]
) -> None:
    _slas(client, auth)
    series = _pushed(client, auth)
    after = range(STEP_AT + 1, PUSHES + 1)
    old_level = series.median_of(range(STEP_AT - BASELINE_RUNS, STEP_AT))
    baselines = [series.verdicts[i]["rel"]["baseline"] for i in after]
    # Until E-divisive has three runs after the step, the median of the last ten still
    # holds a few new runs; it never drifts halfway to the new level.
    assert max(baselines) < old_level * 1.05
    confirmed = range(STEP_AT + 5, PUSHES + 1)
    assert [series.verdicts[i]["rel"]["baseline"] for i in confirmed] == [
        pytest.approx(old_level)
    ] * len(confirmed)
    assert all(series.verdicts[i]["rel"]["verdict"] == "fail" for i in confirmed)
    assert series.verdicts[PUSHES]["rel"]["details"] == {
        "excluded_since": _sha(STEP_AT),
        "tolerance_pct": TOLERANCE,
        "tolerance_source": "sla",
    }


def test_accepting_the_new_level_makes_it_the_baseline(
    client: TestClient, auth: dict[str, str]
) -> None:
    ids = _slas(client, auth)
    series = _pushed(client, auth)
    path = f"/api/v1/slas/{ids['rel']}/baseline-acceptances"
    reason = {"reason": "bf16 attention kernels: slower but needed for accuracy"}
    response = client.post(path, json=reason, headers=auth)
    assert response.status_code == 201, response.text
    accepted = response.json()
    assert accepted["commit"] == _sha(STEP_AT)  # where the open regression began
    assert accepted["accepted_by"].startswith("token 'tests")
    assert accepted["reason"] == reason["reason"] and accepted["accepted_at"]
    by_commit = {"reason": "same change", "commit": _sha(STEP_AT)[:10]}
    response = client.post(
        f"/api/v1/slas/{ids['reg']}/baseline-acceptances", json=by_commit, headers=auth
    )
    assert response.status_code == 201 and response.json()["commit"] == _sha(STEP_AT)

    nxt = series.push(PUSHES + 1)
    new_level = series.median_of(range(PUSHES + 1 - BASELINE_RUNS, PUSHES + 1))
    assert nxt["rel"]["baseline"] == pytest.approx(new_level)
    assert nxt["rel"]["verdict"] == "pass"
    assert nxt["rel"]["details"] == {"tolerance_pct": TOLERANCE, "tolerance_source": "sla"}
    assert nxt["reg"]["verdict"] == "pass"

    shown = _series(client)["acceptances"]
    assert [(a["sla_name"], a["commit"], a["reason"]) for a in shown] == [
        ("rel", _sha(STEP_AT), reason["reason"]),
        ("reg", _sha(STEP_AT), "same change"),
    ]
    listed = client.get(path).json()
    assert [a["accepted_by"] for a in listed] == [accepted["accepted_by"]]


def test_accepting_is_an_sla_change_with_located_errors(
    client: TestClient, engine: Engine, auth: dict[str, str]
) -> None:
    ids = _slas(client, auth)
    series = Series(client, auth)
    for i in range(1, 4):
        series.push(i)
    path = f"/api/v1/slas/{ids['rel']}/baseline-acceptances"
    body = {"reason": "r", "commit": _sha(2)}
    assert client.post(path, json=body).status_code == 401
    pusher = token_headers(engine, "metrics:write", name="ci")
    denied = client.post(path, json=body, headers=pusher)
    assert denied.status_code == 403 and "slas:write" in denied.json()["detail"]

    def refused(sla: str, payload: dict[str, Any]) -> str:
        url = f"/api/v1/slas/{ids[sla]}/baseline-acceptances"
        response = client.post(url, json=payload, headers=auth)
        assert response.status_code == 422, response.text
        return str(response.json()["detail"])

    assert "no baseline to accept" in refused("abs", body)
    assert "no run of it in llm/train/step_time_ms" in refused(
        "rel", {"reason": "r", "commit": "f00"}
    )
    assert "no confirmed regression" in refused("rel", {"reason": "r"})
    assert "reason" in refused("rel", {"reason": "", "commit": _sha(2)})
    assert (
        client.post("/api/v1/slas/nope/baseline-acceptances", json=body, headers=auth).status_code
        == 404
    )
    assert client.get(path).json() == []


def test_migration_0013_matches_the_model_and_downgrades(
    settings: Settings, engine: Engine
) -> None:
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        diff = compare_metadata(context, SQLModel.metadata)
    assert [d for d in diff if "baseline_acceptances" in str(d)] == []
    config = alembic_config(settings.resolved_database_url)
    command.downgrade(config, "0012")
    engine.dispose()
    assert "baseline_acceptances" not in inspect(engine).get_table_names()
    command.upgrade(config, "head")
    engine.dispose()
    assert "baseline_acceptances" in inspect(engine).get_table_names()
