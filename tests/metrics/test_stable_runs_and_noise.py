"""Run flags, `require_stable` SLAs and noise bands through the real push path and the
API, on SQLite and PostgreSQL; expected numbers are computed here by hand or with numpy."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from fastapi.testclient import TestClient
from sqlalchemy import inspect
from sqlalchemy.engine import Engine
from sqlmodel import Session, SQLModel, select

from backend.core.config import Settings
from backend.core.migrate import alembic_config
from backend.models.slas import SlaEvaluation
from tests.factories import native, post_metrics, post_sla

THROTTLED = [
    {"flag": "throttled", "gpu": 0, "reason": "sw_power_cap", "detail": "SM clock 1110 MHz"}
]
UNLOCKED = [{"flag": "unlocked", "gpu": 0, "reason": "clocks_not_locked", "detail": "info"}]
Z = 2.5758293035489004 + 0.8416212335729143  # z(1 - 0.01/2) + z(0.8), from normal tables


def _push(
    client: TestClient, auth: dict[str, str], commit: str, value: float, **kw: Any
) -> dict[str, Any]:
    flags = kw.pop("flags", None)
    env = {"gpu_model": "H200", **({"flags": flags} if flags is not None else {})}
    points = [{"metric": "step_time_ms", "value": value}]
    return post_metrics(client, auth, commit=commit, points=points, environment=env, **kw)


def _by_name(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in body["verdicts"]}


BAD_FLAGS: list[tuple[Any, str, str]] = [
    ("throttled", "$.environment.flags", "expected a list of flag objects"),
    ([{"flag": "throttled"}] * 33, "$.environment.flags", "the limit is 32"),
    (["throttled"], "$.environment.flags[0]", "expected an object"),
    ([{"flag": "hot"}], "$.environment.flags[0].flag", "must be one of throttled"),
    ([{"reason": "x"}], "$.environment.flags[0].flag", "must be one of"),
    ([{"flag": "throttled", "gpu": True}], "$.environment.flags[0].gpu", "GPU index"),
    ([{"flag": "throttled", "gpu": -1}], "$.environment.flags[0].gpu", "GPU index"),
    ([{"flag": "throttled", "reason": 7}], "$.environment.flags[0].reason", "a string"),
    ([{"flag": "contended", "detail": "x" * 513}], "$.environment.flags[0].detail", "512"),
    ([{"flag": "unlocked", "gpus": [0]}], "$.environment.flags[0]", "unknown key 'gpus'"),
]


def test_malformed_flags_are_a_422_naming_the_field(
    client: TestClient, auth: dict[str, str]
) -> None:
    for flags, path, message in BAD_FLAGS:
        doc = native(environment={"gpu_model": "H200", "flags": flags})
        response = client.post("/api/v1/metrics", json=doc, headers=auth)
        assert response.status_code == 422, response.text
        problems = response.json()["detail"]["problems"]
        assert any(p["path"] == path and message in p["message"] for p in problems), problems
    assert client.get("/api/v1/metrics/runs").json()["count"] == 0


def test_require_stable_skips_flagged_runs_and_keeps_them_out_of_baselines(
    client: TestClient, auth: dict[str, str], engine: Engine
) -> None:
    common = {"rule": "relative", "tolerance_pct": 5, "baseline_runs": 2}
    post_sla(client, auth, name="plain", **common)
    post_sla(client, auth, name="stable", require_stable=True, **common)
    for i in range(3):
        _push(client, auth, f"m{i}", 100.0)
    flagged = _by_name(_push(client, auth, "m3", 150.0, flags=THROTTLED))
    assert flagged["plain"]["verdict"] == "fail"  # 150 > 100 * 1.05
    assert flagged["plain"]["flags"] == THROTTLED  # every verdict shows the run's flags
    stable = flagged["stable"]
    assert (stable["verdict"], stable["observed"], stable["previous"]) == ("skipped", 150.0, "pass")
    assert stable["details"]["flags"] == THROTTLED
    assert "throttled (GPU 0, sw_power_cap)" in stable["details"]["skipped"]
    board = {s["name"]: s for s in client.get("/api/v1/slas/board").json()}
    assert board["stable"]["status"] == "pass"  # a skipped run leaves the status alone
    assert board["stable"]["last_skip_reason"] == "throttled (GPU 0, sw_power_cap)"
    assert board["stable"]["sparkline"] == [100.0] * 3  # the skipped 150 is not drawn

    # Baselines of the last 2 runs: plain (100, 150) -> median 125, threshold 131.25;
    # stable leaves the flagged run out: (100, 100) -> 100, threshold 105.
    after = _by_name(_push(client, auth, "m4", 110.0, flags=UNLOCKED))
    assert (after["plain"]["verdict"], after["plain"]["threshold"]) == (
        "pass",
        pytest.approx(131.25),
    )
    assert (after["stable"]["verdict"], after["stable"]["threshold"]) == (
        "fail",
        pytest.approx(105.0),
    )
    assert after["stable"]["flags"] == UNLOCKED  # information only: judged as usual
    board = {s["name"]: s for s in client.get("/api/v1/slas/board").json()}
    assert board["stable"]["last_skip_reason"] is None and board["stable"]["status"] == "fail"

    with Session(engine) as session:
        rows = session.exec(select(SlaEvaluation.verdict).order_by(SlaEvaluation.id)).all()
    assert rows.count("skipped") == 1
    runs = client.get("/api/v1/metrics/runs").json()["items"]
    assert [r["flags"] for r in runs][:2] == [UNLOCKED, THROTTLED]
    series = client.get(
        "/api/v1/metrics/series",
        params={"project": "llm", "benchmark": "train", "metric": "step_time_ms"},
    ).json()
    assert [p["suspect"] for p in series["points"]] == [False, False, False, True, False]
    # A retried push answers with the stored verdicts, flags included.
    retry = client.post(
        "/api/v1/metrics",
        json=native(
            commit="m3",
            points=[{"metric": "step_time_ms", "value": 150.0}],
            environment={"gpu_model": "H200", "flags": THROTTLED},
        ),
        headers=auth,
    )
    assert _by_name(retry.json())["stable"]["flags"] == THROTTLED


def test_unset_tolerance_uses_the_noise_band_of_the_aa_runs(
    client: TestClient, auth: dict[str, str]
) -> None:
    post_sla(client, auth, name="band", rule="relative", baseline_runs=3)
    post_sla(client, auth, name="zero", rule="relative", tolerance_pct=0, baseline_runs=3)
    aa = [100.0, 101.0, 99.0, 100.5]
    for i, value in enumerate(aa):  # one commit run four times (A/A)
        _push(client, auth, "aa", value, run_id=f"aa-{i}")
    _push(client, auth, "aa", 130.0, run_id="aa-hot", flags=THROTTLED, branch="hot")
    spread = float(np.std(np.log(aa), ddof=1))  # the flagged run is left out of the band
    mdc = 100 * math.expm1(Z * spread * math.sqrt(1 / 1 + 1 / 3))
    noise = client.get(
        "/api/v1/metrics/series/noise",
        params={
            "project": "llm",
            "benchmark": "train",
            "metric": "step_time_ms",
            "baseline_runs": 3,
        },
    ).json()
    assert (noise["commits"], noise["runs"]) == (1, 4)
    assert noise["spread_pct"] == pytest.approx(100 * spread, rel=1e-9)
    assert noise["mdc_pct"] == pytest.approx(mdc, rel=1e-9)
    assert noise["bimodal"] is False and noise["bimodality"] is None  # 4 runs: too few
    assert noise["center"] == pytest.approx(100.5)  # median of the newest 3 stable runs
    assert noise["high"] == pytest.approx(100.5 * (1 + mdc / 100))

    # Baseline: median of main's newest 3 runs (101, 99, 100.5) = 100.5.
    inside = 100.5 * (1 + mdc / 100) * 0.999
    verdicts = _by_name(_push(client, auth, "pr1", inside, branch="feature"))
    assert verdicts["band"]["verdict"] == "pass"
    assert verdicts["band"]["details"]["tolerance_source"] == "noise_band"
    assert verdicts["band"]["details"]["tolerance_pct"] == pytest.approx(mdc, rel=1e-9)
    assert verdicts["band"]["details"]["noise"]["runs"] == 4
    assert verdicts["band"]["threshold"] == pytest.approx(100.5 * (1 + mdc / 100))
    assert verdicts["zero"]["verdict"] == "fail"
    assert verdicts["zero"]["details"]["tolerance_source"] == "sla"
    outside = _by_name(
        _push(client, auth, "pr2", 100.5 * (1 + mdc / 100) * 1.001, branch="feature")
    )
    assert outside["band"]["verdict"] == "fail"


def test_noise_route_without_aa_runs_and_past_its_limits(
    client: TestClient, auth: dict[str, str]
) -> None:
    post_sla(client, auth, name="reg", rule="regression")
    body = _by_name(_push(client, auth, "c0", 100.0))
    assert body["reg"]["verdict"] == "insufficient_data"
    assert body["reg"]["details"]["tolerance_source"] == "insufficient"
    params = {"project": "llm", "benchmark": "train", "metric": "step_time_ms"}
    empty = client.get("/api/v1/metrics/series/noise", params=params).json()
    assert empty["spread_pct"] is None and "--repeat" in empty["reason"]
    assert "0 of 0 A/A runs usable; need 4" in empty["reason"]
    cases = [
        ({**params, "runs": 0}, "runs"),
        ({**params, "baseline_runs": 1001}, "baseline_runs"),
        ({**params, "runs": "many"}, "runs"),
        ({**params, "project": "p" * 129}, "project"),
        ({"project": "llm", "benchmark": "train"}, "metric"),
        ({**params, "metric": ""}, "metric"),
    ]
    for query, field in cases:
        response = client.get("/api/v1/metrics/series/noise", params=query)
        assert response.status_code == 422, (query, response.text)
        assert [e["loc"] for e in response.json()["detail"]] == [["query", field]]


def test_relative_rule_without_a_band_is_insufficient_data_until_one_forms(
    client: TestClient, auth: dict[str, str]
) -> None:
    """The issue's case: a relative rule with no tolerance judged A/A noise at 0 % and
    failed. Now: `insufficient_data` naming what is missing, on the push response and the
    board, until the A/A runs form a band; then a verdict at the band's MDC."""
    post_sla(client, auth, name="rel", rule="relative", baseline_runs=3)
    aa = [611.5, 596.5, 612.0, 605.0, 609.0]  # the third, fourth and fifth run flagged
    for i, value in enumerate(aa):
        flags = THROTTLED if i >= 2 else None
        body = _by_name(_push(client, auth, "aa", value, run_id=f"aa-{i}", flags=flags))
    rel = body["rel"]
    assert rel["verdict"] == "insufficient_data" and rel["threshold"] is None
    # 5 A/A runs of one commit, 2 unflagged: 1 degree of freedom of the 3 a band needs, so 2
    # more usable runs: 4.
    missing = rel["details"]["insufficient_data"]
    assert "2 of 5 A/A runs usable (3 flagged: throttled (GPU 0, sw_power_cap)); need 4" in missing
    board = {s["name"]: s for s in client.get("/api/v1/slas").json()["items"]}["rel"]
    assert board["status"] == "insufficient_data" and "2 of 5" in board["last_skip_reason"]
    params = {"project": "llm", "benchmark": "train", "metric": "step_time_ms"}
    noise = client.get("/api/v1/metrics/series/noise", params=params).json()
    assert (noise["aa_runs"], noise["runs_usable"], noise["runs_left_out"]) == (5, 2, 3)
    assert noise["runs_needed"] == 4 and noise["spread_pct"] is None
    assert sorted(r["run_id"] for r in noise["left_out"]) == ["aa-2", "aa-3", "aa-4"]
    assert {r["flags"] for r in noise["left_out"]} == {"throttled (GPU 0, sw_power_cap)"}
    for i, value in enumerate([604.0, 610.0]):  # two more unflagged runs: the band forms
        body = _by_name(_push(client, auth, "aa", value, run_id=f"aa-more-{i}"))
    assert body["rel"]["verdict"] in ("pass", "fail")
    assert body["rel"]["details"]["tolerance_source"] == "noise_band"
    board = {s["name"]: s for s in client.get("/api/v1/slas").json()["items"]}["rel"]
    assert board["status"] == body["rel"]["verdict"] and board["last_skip_reason"] is None


def test_migration_0021_widens_the_verdict_columns_and_downgrades(
    settings: Settings, engine: Engine, client: TestClient, auth: dict[str, str]
) -> None:
    post_sla(client, auth, name="rel", rule="relative", baseline_runs=1)
    assert _by_name(_push(client, auth, "c0", 1.0))["rel"]["verdict"] == "insufficient_data"
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        diff = compare_metadata(context, SQLModel.metadata)
    assert [d for d in diff if "status" in str(d) or "verdict" in str(d)] == []
    config = alembic_config(settings.resolved_database_url)
    command.downgrade(config, "0020")
    engine.dispose()
    with engine.connect() as conn:
        verdicts = conn.exec_driver_sql("SELECT verdict FROM sla_evaluations").scalars().all()
        status = conn.exec_driver_sql("SELECT status FROM slas").scalar_one()
    assert verdicts == ["no_data"] and status == "no_data"
    command.upgrade(config, "head")
    engine.dispose()
    assert _evaluations(engine) == 1


def _evaluations(engine: Engine) -> int:
    with Session(engine) as session:
        return len(session.exec(select(SlaEvaluation)).all())


def test_migration_0018_matches_the_models_and_downgrades(
    settings: Settings, engine: Engine, client: TestClient, auth: dict[str, str]
) -> None:
    """Down and up again with an SLA that has evaluations: on SQLite both directions copy
    the `slas` table (batch mode), which must not cascade-delete its evaluations."""
    post_sla(client, auth, name="kept", rule="relative", tolerance_pct=5, baseline_runs=1)
    for i in range(2):
        _push(client, auth, f"k{i}", 100.0)
    evaluations = _evaluations(engine)
    assert evaluations >= 2
    ours = ("require_stable", "last_skip_reason", "tolerance_pct", "aa_repeats", "aa_group")
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        diff = compare_metadata(context, SQLModel.metadata)
    assert [d for d in diff if any(c in str(d) for c in ours)] == []
    config = alembic_config(settings.resolved_database_url)
    command.downgrade(config, "0016")
    engine.dispose()
    assert "require_stable" not in {c["name"] for c in inspect(engine).get_columns("slas")}
    with engine.connect() as conn:  # the 0016 table: SlaEvaluation's model has no new column
        kept = conn.exec_driver_sql("SELECT count(*) FROM sla_evaluations").scalar_one()
    assert kept == evaluations
    command.upgrade(config, "head")
    engine.dispose()
    columns = {c["name"]: c for c in inspect(engine).get_columns("slas")}
    assert columns["tolerance_pct"]["nullable"] and "require_stable" in columns
    assert _evaluations(engine) == evaluations
