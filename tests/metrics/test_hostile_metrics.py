"""Metrics that cannot poison the shared pages (issue 25, item 3), on SQLite and PostgreSQL.

Hostile pushes get 422 with the JSON path of what is wrong and store nothing; a run put
into the database some other way with an impossible timestamp is skipped by every read,
which says so in `skipped`, instead of failing the page for everyone.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlmodel import Session, func, select

from backend.core.config import Settings
from backend.models.metrics import MetricPoint, MetricRun
from tests.factories import native, post_metrics, post_sla

SURROGATE = native(points=[{"metric": "\ud800", "value": 1.0}])
PYTEST_BENCH = {"benchmarks": 5, "machine_info": {}}
GOOGLE_BENCH = {"benchmarks": 5, "context": {}}


def _count(engine: Engine) -> int:
    with Session(engine) as s:
        return s.exec(select(func.count()).select_from(MetricRun)).one()


# (document, ?format=, the JSON path the 422 must name)
HOSTILE: list[tuple[Any, str | None, str]] = [
    (native(timestamp=float("nan")), None, "$.timestamp"),
    (native(timestamp=253402300800), None, "$.timestamp"),
    (native(timestamp=-1e12), None, "$.timestamp"),
    (native(timestamp=10**400), None, "$.timestamp"),
    (native(timestamp="9999-12-31T23:59:59-23:59"), None, "$.timestamp"),
    (native(timestamp="1999-12-31T23:59:59Z"), None, "$.timestamp"),
    ([{"name": "x", "unit": "ms", "value": 1}], "pytest-benchmark", "$"),
    ([{"name": "x", "unit": "ms", "value": 1}], "google-benchmark", "$"),
    (PYTEST_BENCH, None, "$.benchmarks"),
    (GOOGLE_BENCH, None, "$.benchmarks"),
    ({**GOOGLE_BENCH, "benchmarks": [], "context": {"date": "NaN"}}, None, "$.context.date"),
    ({**PYTEST_BENCH, "benchmarks": [], "datetime": 1e300}, None, "$.datetime"),
    (SURROGATE, None, "$.points[0].metric"),
    (native(project="ll\x00m"), None, "$.project"),
    (native(environment={"gpu": ["\udfff"]}), None, "$.environment.gpu[0]"),
    (native(environment={"\ud800": 1}), None, "$.environment['\\ud800']"),
    (native(points=[{"metric": "m", "value": 10**400}]), None, "$.points[0].value"),
]


def test_a_hostile_push_is_422_with_its_json_path(
    client: TestClient, engine: Engine, auth: dict[str, str]
) -> None:
    """One database per engine for the whole table: each case stores nothing anyway."""
    for doc, fmt, path in HOSTILE:
        body = json.dumps(doc)  # NaN as NaN, a lone surrogate as the raw escape \ud800
        assert "\ud800" not in body and "\udfff" not in body
        params = {"format": fmt, "project": "p", "run_id": "r"} if fmt else {}
        headers = auth | {"content-type": "application/json"}
        response = client.post("/api/v1/metrics", content=body, params=params, headers=headers)
        assert response.status_code == 422, (body[:200], response.text)
        problems = {p["path"] for p in response.json()["detail"]["problems"]}
        assert path in problems, (body[:200], problems)
    assert _count(engine) == 0


def test_the_timestamp_window_follows_the_settings(
    client: TestClient,
    engine: Engine,
    auth: dict[str, str],
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = datetime.now(UTC)
    soon, later = now + timedelta(minutes=50), now + timedelta(hours=2)
    monkeypatch.setattr(settings, "metric_max_future_s", 3600)
    monkeypatch.setattr(settings, "metric_min_year", 2025)
    pushes = [("a", "2024-12-31T23:59:59Z"), ("b", later.isoformat()), ("c", 1735689599)]
    for run_id, when in pushes:
        refused = client.post("/api/v1/metrics", json=native(run_id=run_id, timestamp=when),
                              headers=auth)  # fmt: skip
        assert refused.status_code == 422, (when, refused.text)
        assert "PERFDASH_METRIC_MIN_YEAR" in refused.json()["detail"]["problems"][0]["message"]
    for run_id, when in (("d", soon.isoformat()), ("e", "2025-01-01T00:00:00+00:00")):
        accepted = client.post("/api/v1/metrics", json=native(run_id=run_id, timestamp=when),
                               headers=auth)  # fmt: skip
        assert accepted.status_code == 200, accepted.text
    assert _count(engine) == 2


# The probe's 9999-12-31T23:59:59-23:59 (psycopg sends it in binary, as UTC) is stored by
# PostgreSQL as this instant of year 10000, which psycopg cannot read back; SQLite keeps
# text, so there it is written the way SQLAlchemy writes its times.
_BAD_TIMESTAMP = {
    "postgresql": "10000-01-01 23:58:59+00",
    "sqlite": "10000-01-01 23:58:59.000000",
}


def _insert_bad_run(engine: Engine) -> None:
    """A run of the `train` series with an impossible timestamp, written with plain SQL."""
    with engine.begin() as conn:
        run_id = conn.execute(
            text(
                'INSERT INTO metric_runs (idempotency_key, project, benchmark, "commit", '
                "branch, run_id, url, trace_id, timestamp, environment, created_at) VALUES "
                "('bad', 'llm', 'train', 'bad', 'main', 'bad', '', NULL, :ts, '{}', :now) "
                "RETURNING id"
            ),
            {"ts": _BAD_TIMESTAMP[engine.dialect.name], "now": datetime.now(UTC)},
        ).scalar_one()
        conn.execute(
            text(
                "INSERT INTO metric_points (run_id, metric, unit, direction, value, n, p50) "
                "VALUES (:run, 'step_time_ms', 'ms', 'lower_is_better', 99, 1, 99)"
            ),
            {"run": run_id},
        )


def test_reads_skip_a_stored_run_with_an_impossible_timestamp(
    client: TestClient, engine: Engine, auth: dict[str, str]
) -> None:
    post_sla(client, auth, name="max5", statistic="max", window=5, op="<=", threshold=50)
    for commit in ("c1", "c2"):
        post_metrics(client, auth, commit=commit)
    _insert_bad_run(engine)
    with Session(engine) as s:
        assert s.exec(select(func.count()).select_from(MetricPoint)).one() == 3

    runs = client.get("/api/v1/metrics/runs")
    assert runs.status_code == 200, runs.text
    assert [r["commit"] for r in runs.json()["items"]] == ["c2", "c1"]
    assert (runs.json()["count"], runs.json()["skipped"]) == (2, 1)
    series = client.get(
        "/api/v1/metrics/series",
        params={"project": "llm", "benchmark": "train", "metric": "step_time_ms"},
    )
    assert series.status_code == 200, series.text
    assert [p["commit"] for p in series.json()["points"]] == ["c1", "c2"]
    assert series.json()["skipped"] == 1
    # The SLA reads its last 5 runs from the same series: the bad run (99) is no part of it.
    verdict = post_metrics(client, auth, commit="c3")["verdicts"][0]
    assert (verdict["verdict"], verdict["observed"]) == ("pass", 11.0)
    for path in ("/api/v1/metrics/facets", "/api/v1/slas/board", "/api/v1/slas"):
        assert client.get(path).status_code == 200, path
