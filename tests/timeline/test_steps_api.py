"""Steps through the API: found without ProfilerStep, tried with `?step_marker=`, chosen and
kept per trace (re-deriving the summary from stored events), on the H200 fixtures."""

from __future__ import annotations

import json
from typing import Any

from fastapi.testclient import TestClient

from backend.services.analysis.summary_view import step_time_ns
from tests.factories import Ingest
from tests.timeline.conftest import H200, REPO

DATA = REPO / "tests" / "data"
COMPILED = DATA / "torch" / "h200_compiled_steps.pt.trace.json.gz"
NVTX = DATA / "nsys" / "nvtx_steps.sqlite"


def _steps(client: TestClient, trace_id: str, **params: str) -> dict[str, Any]:
    response = client.get(f"/api/v1/traces/{trace_id}/timeline/steps", params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _summary_steps(client: TestClient, trace_id: str) -> dict[str, Any]:
    steps: dict[str, Any] = client.get(f"/api/v1/traces/{trace_id}/summary").json()["summary"][
        "steps"
    ]
    return steps


def test_nsys_numbered_nvtx_ranges_are_steps(client: TestClient, ingest: Ingest) -> None:
    trace_id = ingest(NVTX)
    body = _steps(client, trace_id)
    assert (body["marker"], body["marker_source"], body["chosen"]) == ("train_step_N", "auto", None)
    assert [(s["step"], s["name"]) for s in body["items"]] == [
        (n, f"train_step_{n}") for n in range(5)
    ]
    measured = json.loads((DATA / "nsys" / "nvtx_steps.steps.json").read_text())["steps"]
    for window, m in zip(body["items"], measured, strict=True):
        assert 0.97 * m["wall_ns"] <= window["end_ns"] - window["start_ns"] <= m["wall_ns"]
    summary = _summary_steps(client, trace_id)
    assert summary["marker"] == "train_step_N"
    assert step_time_ns({"steps": summary}) == summary["cpu"]["p50_ns"]


def test_a_marker_is_tried_then_chosen_and_kept(client: TestClient, ingest: Ingest) -> None:
    trace_id = ingest(COMPILED)
    auto = _summary_steps(client, trace_id)
    assert (auto["marker"], auto["marker_source"], len(auto["steps"])) == (
        "compiled_step", "auto", 4
    )  # fmt: skip
    other = "Optimizer.step#AdamW.step"
    tried = _steps(client, trace_id, step_marker=other)
    assert (tried["marker"], tried["marker_source"], tried["chosen"]) == (other, "user", None)
    assert len(tried["items"]) == 4
    assert _steps(client, trace_id)["marker"] == "compiled_step"  # trying keeps nothing

    put = client.put(f"/api/v1/traces/{trace_id}/step-marker", json={"marker": other})
    assert put.status_code == 200, put.text
    assert _steps(client, trace_id)["chosen"] == other
    chosen = _summary_steps(client, trace_id)
    assert (chosen["marker"], chosen["marker_source"]) == (other, "user")
    assert chosen["cpu"]["p50_ns"] < auto["cpu"]["p50_ns"]  # the optimizer is part of a step
    assert client.get(f"/api/v1/traces/{trace_id}").json()["step_marker"] == other

    # Back to the rule: the summary re-derived from stored events equals the ingest's own.
    back = client.put(f"/api/v1/traces/{trace_id}/step-marker", json={"marker": None})
    assert back.status_code == 200, back.text
    assert _summary_steps(client, trace_id) == auto


def test_a_chosen_marker_equals_what_ingest_found(client: TestClient, ingest: Ingest) -> None:
    trace_id = ingest(H200)
    found = _summary_steps(client, trace_id)
    assert (found["marker"], found["marker_source"]) == ("ProfilerStep#N", "ProfilerStep")
    put = client.put(f"/api/v1/traces/{trace_id}/step-marker", json={"marker": "ProfilerStep"})
    assert put.status_code == 200, put.text
    assert _summary_steps(client, trace_id) == {**found, "marker_source": "user"}


def test_a_marker_that_names_nothing_is_refused(client: TestClient, ingest: Ingest) -> None:
    trace_id = ingest(COMPILED)
    before = _summary_steps(client, trace_id)
    put = client.put(f"/api/v1/traces/{trace_id}/step-marker", json={"marker": "no_such_range"})
    assert put.status_code == 422
    assert "no_such_range" in put.json()["detail"] and "compiled_step" in put.json()["detail"]
    assert _summary_steps(client, trace_id) == before
    tried = _steps(client, trace_id, step_marker="no_such_range")
    assert (tried["marker"], tried["items"]) == ("no_such_range", [])
    assert client.put("/api/v1/traces/nope/step-marker", json={"marker": "x"}).status_code == 404
