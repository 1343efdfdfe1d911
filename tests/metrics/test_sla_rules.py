"""SLA rules evaluated inline on each push, on SQLite and PostgreSQL."""

from __future__ import annotations

import random
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine
from sqlmodel import Session, func, select

from backend.models.metrics import MetricPoint, MetricRun
from backend.models.slas import SlaEvaluation
from backend.services.metrics import push as metric_push
from tests.factories import native, post_metrics, post_sla


def _verdicts(body: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
    return {
        v["name"]: (v["verdict"], v["observed"], v["threshold"], v["baseline"])
        for v in body["verdicts"]
    }


def test_absolute_rules_on_run_statistics(client: TestClient, auth: dict[str, str]) -> None:
    post_sla(client, auth, name="p95", statistic="p95", op="<=", threshold=12)
    post_sla(client, auth, name="max", statistic="max", op="<", threshold=12)
    post_sla(client, auth, name="tps", metric="tokens_per_s", op=">=", threshold=40000)
    points = [{"metric": "step_time_ms", "samples": [10.0, 11.0, 12.0]}]
    body = post_metrics(client, auth, points=points)
    assert _verdicts(body) == {
        "max": ("fail", 12.0, 12.0, None),
        "p95": ("pass", pytest.approx(11.9), 12.0, None),
        "tps": ("no_data", None, None, None),
    }
    board = {s["name"]: s for s in client.get("/api/v1/slas/board").json()}
    assert board["max"]["status"] == "fail" and board["max"]["sparkline"] == [12.0]


def test_statistic_over_the_last_n_runs(client: TestClient, auth: dict[str, str]) -> None:
    post_sla(client, auth, name="mean3", statistic="mean", window=3, op="<=", threshold=11)
    verdicts = []
    for i, value in enumerate([10.0, 11.0, 15.0]):
        body = post_metrics(
            client, auth, commit=f"c{i}", points=[{"metric": "step_time_ms", "value": value}]
        )
        verdicts.append(_verdicts(body)["mean3"][:2])
    assert verdicts == [("pass", 10.0), ("pass", 10.5), ("fail", 12.0)]


def test_relative_to_the_median_of_main(client: TestClient, auth: dict[str, str]) -> None:
    post_sla(client, auth, name="rel", rule="relative", tolerance_pct=3, baseline_runs=3)

    def push(commit: str, value: float, branch: str = "main") -> tuple[Any, ...]:
        points = [{"metric": "step_time_ms", "value": value}]
        body = post_metrics(client, auth, commit=commit, branch=branch, points=points)
        return _verdicts(body)["rel"]

    assert push("m0", 500.0) == ("no_data", 500.0, None, None)
    for i, value in enumerate([100.0, 101.0, 99.0]):
        push(f"m{i + 1}", value)
    # Baseline: median of main's last 3 runs (100, 101, 99) = 100; threshold 103.
    assert push("pr1", 102.9, "feature") == ("pass", 102.9, pytest.approx(103.0), 100.0)
    assert push("pr2", 103.5, "feature") == ("fail", 103.5, pytest.approx(103.0), 100.0)
    # The board carries the newest verdict's baseline (no first bad commit: not a regression).
    board = {s["name"]: s for s in client.get("/api/v1/slas/board").json()}
    assert (board["rel"]["last_baseline"], board["rel"]["first_bad_commit"]) == (100.0, None)


def test_relative_follows_direction_and_no_increase_ignores_it(
    client: TestClient, auth: dict[str, str]
) -> None:
    post_sla(client, auth, name="tps", metric="tps", rule="relative", tolerance_pct=5)
    post_sla(client, auth, name="mem", metric="mem", rule="no_increase", tolerance_pct=1)

    def pts(tps: float, mem: float) -> list[dict[str, Any]]:
        return [
            {"metric": "tps", "value": tps, "direction": "higher_is_better"},
            {"metric": "mem", "value": mem, "direction": "higher_is_better"},
        ]

    post_metrics(client, auth, commit="a", points=pts(1000, 100))
    body = post_metrics(client, auth, commit="b", points=pts(940, 102))
    assert _verdicts(body) == {
        "mem": ("fail", 102.0, pytest.approx(101.0), 100.0),
        "tps": ("fail", 940.0, pytest.approx(950.0), 1000.0),
    }
    assert {v["previous"] for v in body["verdicts"]} == {"no_data"}


def test_determinism_hash_equals_the_baseline(client: TestClient, auth: dict[str, str]) -> None:
    post_sla(client, auth, name="det", metric="determinism_hash", rule="determinism")
    post_metrics(client, auth, commit="a", determinism_hash="f00d")
    same = post_metrics(client, auth, commit="b", determinism_hash="f00d")
    other = post_metrics(client, auth, commit="c", determinism_hash="beef")
    assert _verdicts(same)["det"][0] == "pass"
    assert _verdicts(other)["det"][0] == "fail"
    assert other["verdicts"][0]["details"] == {"hash": "beef", "baseline_hash": "f00d"}


def test_regression_rule_finds_a_shift_in_samples(client: TestClient, auth: dict[str, str]) -> None:
    post_sla(client, auth, name="reg", rule="regression", tolerance_pct=2, baseline_runs=5)
    rng = random.Random(7)
    for i in range(5):
        samples = [rng.gauss(100, 2) for _ in range(30)]
        post_metrics(
            client, auth, commit=f"m{i}", points=[{"metric": "step_time_ms", "samples": samples}]
        )
    same = post_metrics(
        client,
        auth,
        commit="ok",
        points=[{"metric": "step_time_ms", "samples": [rng.gauss(100, 2) for _ in range(30)]}],
    )
    slow = post_metrics(
        client,
        auth,
        commit="slow",
        points=[{"metric": "step_time_ms", "samples": [rng.gauss(108, 2) for _ in range(30)]}],
    )
    assert same["verdicts"][0]["verdict"] == "pass"
    verdict = slow["verdicts"][0]
    assert verdict["verdict"] == "fail"
    details = verdict["details"]
    assert details["test"] == "mann_whitney_u" and details["p_value"] < 1e-6
    assert details["first_bad_commit"] == "slow"
    assert details["shift_pct"] == pytest.approx(8, abs=2)


def test_sla_selector_environment_and_branch(client: TestClient, auth: dict[str, str]) -> None:
    post_sla(client, auth, name="h200", environment={"gpu_model": "H200"}, threshold=100)
    post_sla(client, auth, name="main-only", branch="main", threshold=100)
    on_a100 = post_metrics(client, auth, commit="a", environment={"gpu_model": "A100"})
    on_pr = post_metrics(client, auth, commit="b", branch="pr")
    assert [v["name"] for v in on_a100["verdicts"]] == ["main-only"]
    assert [v["name"] for v in on_pr["verdicts"]] == ["h200"]


def test_a_retry_returns_the_first_verdicts_and_stores_no_new_history(
    client: TestClient, engine: Engine, auth: dict[str, str]
) -> None:
    post_sla(client, auth, name="abs", threshold=11.5)
    first = post_metrics(client, auth)
    again = post_metrics(client, auth)
    assert _verdicts(first) == _verdicts(again) == {"abs": ("pass", 11.0, 11.5, None)}
    with Session(engine) as s:
        assert s.exec(select(func.count()).select_from(SlaEvaluation)).one() == 1


def test_a_failure_after_the_insert_leaves_nothing(
    client: TestClient, engine: Engine, auth: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    post_sla(client, auth, name="abs", threshold=11.5)

    def explode(*_args: Any) -> Any:
        raise RuntimeError("evaluation broke after the points were inserted")

    monkeypatch.setattr(metric_push, "evaluate_run", explode)
    with Session(engine) as session, pytest.raises(RuntimeError):
        metric_push.push_metrics(session, native())
    with Session(engine) as s:
        for table in (MetricRun, MetricPoint, SlaEvaluation):
            assert s.exec(select(func.count()).select_from(table)).one() == 0


def test_sla_crud_and_apply_diff(client: TestClient, auth: dict[str, str]) -> None:
    created = post_sla(client, auth, name="a", threshold=10)
    assert client.post("/api/v1/slas", json={"name": "a"}, headers=auth).status_code == 422
    no_threshold = {"name": "x", "project": "p", "benchmark": "b", "metric": "m"}
    assert client.post("/api/v1/slas", json=no_threshold, headers=auth).status_code == 422
    assert client.post("/api/v1/slas", json={**no_threshold, "threshold": 1}).status_code == 401
    spec = [
        {
            "name": "a",
            "project": "llm",
            "benchmark": "train",
            "metric": "step_time_ms",
            "threshold": 12,
        },
        {"name": "b", "project": "llm", "benchmark": "train", "metric": "m", "threshold": 1},
    ]
    diff = client.post("/api/v1/slas/apply", json=spec, headers=auth).json()
    assert diff == {
        "created": ["b"],
        "updated": {"a": {"threshold": [10.0, 12.0]}},
        "unchanged": [],
    }
    again = client.post("/api/v1/slas/apply", json=spec, headers=auth).json()
    assert again == {"created": [], "updated": {}, "unchanged": ["a", "b"]}
    sla_id = created["id"]
    replaced = client.put(f"/api/v1/slas/{sla_id}", json={**spec[0], "threshold": 9}, headers=auth)
    assert replaced.json()["threshold"] == 9
    assert client.delete(f"/api/v1/slas/{sla_id}", headers=auth).status_code == 204
    assert client.get(f"/api/v1/slas/{sla_id}").status_code == 404
    assert [s["name"] for s in client.get("/api/v1/slas").json()["items"]] == ["b"]


def test_prometheus_gauges(client: TestClient, auth: dict[str, str]) -> None:
    post_sla(client, auth, name='odd "name"', threshold=11.5)
    post_sla(client, auth, name="never", metric="other", threshold=1)
    post_sla(client, auth, name="slow", threshold=5)
    post_metrics(client, auth)
    response = client.get("/metrics")
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    lines = response.text.splitlines()
    labels = 'project="llm",benchmark="train",metric="step_time_ms",severity="warning"'
    assert f'perfdash_sla_status{{sla="odd \\"name\\"",{labels}}} 1.0' in lines
    assert f'perfdash_sla_status{{sla="slow",{labels}}} 0.0' in lines
    assert f'perfdash_sla_observed{{sla="slow",{labels}}} 11.0' in lines
    assert any(
        line.startswith('perfdash_sla_status{sla="never"') and line.endswith(" -1.0")
        for line in lines
    )
    assert "# TYPE perfdash_sla_threshold gauge" in lines
