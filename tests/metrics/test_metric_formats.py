"""Format adapters on real tool output (tests/data/metrics, made by its script) and bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from backend.services.metrics.formats import (
    MetricDocumentError,
    detect_metric_format,
    parse_document,
)
from backend.services.series.statistics import percentile

DATA = Path(__file__).resolve().parents[1] / "data" / "metrics"


def _load(name: str) -> Any:
    return json.loads((DATA / name).read_text())


def test_pytest_benchmark_rounds_become_samples_in_ms() -> None:
    doc = _load("pytest_benchmark.json")
    push = parse_document(doc, defaults={"project": "p", "commit": "abc", "branch": "main"})
    assert push.format == "pytest-benchmark"
    # "unversioned" / "(unknown)" placeholders give way to the query's values.
    assert (push.commit, push.branch) == ("abc", "main")
    assert [p.benchmark for p in push.points] == [b["fullname"] for b in doc["benchmarks"]]
    for point, bench in zip(push.points, doc["benchmarks"], strict=True):
        assert (point.metric, point.unit, point.direction) == ("time_ms", "ms", "lower_is_better")
        assert point.samples == [v * 1e3 for v in bench["stats"]["data"]]
        assert point.value == pytest.approx(bench["stats"]["median"] * 1e3)


def test_pytest_benchmark_without_raw_data_keeps_its_summary() -> None:
    doc = _load("pytest_benchmark.json")
    for bench in doc["benchmarks"]:
        del bench["stats"]["data"]
    point = parse_document(doc, defaults={"project": "p", "commit": "c"}).points[0]
    stats = doc["benchmarks"][0]["stats"]
    assert point.samples is None
    assert point.stats == pytest.approx(
        {
            "min": stats["min"] * 1e3,
            "max": stats["max"] * 1e3,
            "mean": stats["mean"] * 1e3,
            "p50": stats["median"] * 1e3,
        }
    )


def test_google_benchmark_repetitions_become_samples() -> None:
    doc = _load("google_benchmark.json")
    push = parse_document(doc, defaults={"project": "p", "commit": "c"})
    assert push.format == "google-benchmark"
    iterations = [b for b in doc["benchmarks"] if b["run_type"] == "iteration"]
    real = next(p for p in push.points if p.metric == "real_time")
    assert real.samples == [b["real_time"] for b in iterations]
    assert (real.unit, real.benchmark) == ("ns", iterations[0]["run_name"])
    rate = next(p for p in push.points if p.metric == "items_per_second")
    assert rate.direction == "higher_is_better"
    assert push.environment["num_cpus"] == doc["context"]["num_cpus"]
    assert "caches" not in push.environment


@pytest.mark.parametrize(
    ("fmt", "direction"),
    [
        (None, "lower_is_better"),
        ("customSmallerIsBetter", "lower_is_better"),
        ("customBiggerIsBetter", "higher_is_better"),
    ],
)
def test_github_action_benchmark_lists(fmt: str | None, direction: str) -> None:
    doc = _load("github_action_benchmark.json")
    push = parse_document(doc, fmt=fmt, defaults={"project": "p", "commit": "c", "benchmark": "ci"})
    assert [(p.benchmark, p.metric, p.unit, p.value) for p in push.points] == [
        ("ci", d["name"], d["unit"], d["value"]) for d in doc
    ]
    assert {p.direction for p in push.points} == {direction}


@pytest.mark.parametrize(
    ("doc", "paths"),
    [
        ({"points": "x", "project": "p", "commit": "c"}, {"$.points", "$"}),
        (
            {"project": "p", "commit": "c", "benchmark": "b", "points": [{"metric": "m"}]},
            {"$.points[0]"},
        ),
        (
            {
                "project": "p",
                "commit": "c",
                "benchmark": "b",
                "points": [{"metric": "m", "value": True, "direction": "up"}],
            },
            {"$.points[0].value", "$.points[0].direction"},
        ),
        (
            {
                "project": "p",
                "commit": "c",
                "benchmark": "b",
                "timestamp": "yesterday",
                "points": [{"metric": "m", "samples": []}],
            },
            {"$.timestamp", "$.points[0].samples"},
        ),
        (
            {
                "project": "p" * 200,
                "commit": "c",
                "benchmark": "b",
                "points": [{"metric": "m", "value": 1}, {"metric": "m", "value": 2}],
            },
            {"$.project", "$.points[1]"},
        ),
        (
            [{"name": "x", "value": "1"}, 3],
            {"$[0].value", "$[1]", "$.project", "$.run_id", "$.points[0].benchmark"},
        ),
    ],
)
def test_every_problem_is_reported_with_its_path(doc: Any, paths: set[str]) -> None:
    with pytest.raises(MetricDocumentError) as info:
        parse_document(doc)
    assert {p.path for p in info.value.problems} == paths


def test_detection() -> None:
    assert detect_metric_format(_load("pytest_benchmark.json")) == "pytest-benchmark"
    assert detect_metric_format(_load("google_benchmark.json")) == "google-benchmark"
    assert detect_metric_format(_load("github_action_benchmark.json")) == "github-action-benchmark"
    assert detect_metric_format({"points": []}) == "native"
    assert detect_metric_format("text") is None


@pytest.mark.parametrize(
    ("name", "params", "metrics"),
    [
        ("pytest_benchmark.json", {}, {"time_ms"}),
        ("google_benchmark.json", {}, {"real_time", "cpu_time", "items_per_second"}),
        (
            "github_action_benchmark.json",
            {"format": "customSmallerIsBetter", "benchmark": "ci"},
            {"step_time", "peak_mem"},
        ),
    ],
)
def test_each_format_through_the_api(
    client: TestClient, auth: dict[str, str], name: str, params: dict[str, str], metrics: set[str]
) -> None:
    query = {"project": "p", "commit": "abc", "branch": "main", **params}
    response = client.post("/api/v1/metrics", json=_load(name), headers=auth, params=query)
    assert response.status_code == 200, response.text
    runs = client.get("/api/v1/metrics/runs").json()["items"]
    assert {p["metric"] for r in runs for p in r["points"]} == metrics
    assert {(r["project"], r["commit"], r["branch"]) for r in runs} == {("p", "abc", "main")}
    again = client.post("/api/v1/metrics", json=_load(name), headers=auth, params=query).json()
    assert again["stored"] == 0 and again["duplicates"] == response.json()["stored"]


def test_percentile_matches_numpy_linear_definition() -> None:
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 95) == pytest.approx(4.8)
    assert percentile([3.0, 1.0, 2.0], 0) == 1.0
