"""Timeline API around single events: detail with CPU launch, steps, search, gaps, errors."""

from __future__ import annotations

import itertools
from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.engine import Engine

from backend.services.timeline.gaps import RULE
from tests.factories import Ingest, upload_trace
from tests.timeline.conftest import H200, SYNTHETIC


def _items(client: TestClient, trace_id: str, **params: object) -> list[dict[str, object]]:
    body = client.get(f"/api/v1/traces/{trace_id}/timeline", params=params).json()
    items: list[dict[str, object]] = body["items"]
    return items


def test_kernel_detail_follows_correlation_to_runtime_and_cpu_op(
    client: TestClient, engine: Engine, ingest: Ingest
) -> None:
    trace_id = ingest(H200)
    kernels = [i for i in _items(client, trace_id, max_items=100_000) if i["category"] == "compute"]
    assert len(kernels) == 51
    for kernel in kernels[:10]:
        detail = client.get(f"/api/v1/traces/{trace_id}/events/{kernel['id']}").json()
        event, runtime, cpu_op = detail["event"], detail["runtime"], detail["cpu_op"]
        assert event["name"] == kernel["name"]
        assert event["lane_label"] == "GPU 0 · stream 7"
        assert runtime["kind"] == "runtime" and runtime["correlation"] == event["correlation"]
        assert "LaunchKernel" in runtime["name"]
        assert runtime["start_ns"] <= event["start_ns"]
        assert cpu_op["kind"] == "cpu_op" and cpu_op["tid"] == runtime["tid"]
        assert cpu_op["start_ns"] <= runtime["start_ns"]
        assert cpu_op["start_ns"] + cpu_op["dur_ns"] >= runtime["start_ns"] + runtime["dur_ns"]
        with engine.connect() as conn:
            total, count = conn.execute(
                text("SELECT total_ns, count FROM kernel_stats WHERE trace_id=:t AND name=:n"),
                {"t": trace_id, "n": event["name"]},
            ).one()
        assert (detail["kernel_stats"]["total_ns"], detail["kernel_stats"]["count"]) == (
            total,
            count,
        )


def test_event_detail_errors(client: TestClient, ingest: Ingest) -> None:
    trace_id = ingest(H200)
    assert client.get(f"/api/v1/traces/{trace_id}/events/999999999").status_code == 404
    assert client.get("/api/v1/traces/nope/events/1").status_code == 404


def test_steps_search_overview(client: TestClient, ingest: Ingest) -> None:
    trace_id = ingest(SYNTHETIC)
    steps = client.get(f"/api/v1/traces/{trace_id}/timeline/steps").json()["items"]
    assert [s["step"] for s in steps] == sorted(s["step"] for s in steps)
    assert all(s["name"] == f"ProfilerStep#{s['step']}" for s in steps)
    assert all(a["end_ns"] <= b["start_ns"] for a, b in itertools.pairwise(steps))

    found = client.get(
        f"/api/v1/traces/{trace_id}/timeline/search", params={"q": "ALLREDUCE", "limit": 5}
    ).json()
    assert found["names"] and all("allreduce" in n["name"].lower() for n in found["names"])
    assert len(found["matches"]) == 5 and found["truncated"] is True
    starts = [m["start_ns"] for m in found["matches"]]
    assert starts == sorted(starts)

    overview = client.get(f"/api/v1/traces/{trace_id}/timeline/overview?bins=50").json()
    assert overview["devices"] == 1 and len(overview["bins"]) == 50
    assert all(0.0 <= b["utilization"] <= 1.0 for b in overview["bins"])
    assert max(b["utilization"] for b in overview["bins"]) > 0.5


def test_gaps_are_longest_first_with_a_cause(client: TestClient, ingest: Ingest) -> None:
    trace_id = ingest(SYNTHETIC)
    body = client.get(
        f"/api/v1/traces/{trace_id}/timeline/gaps", params={"min_ns": 20_000, "limit": 10}
    ).json()
    assert body["rule"] == RULE and body["count"] >= len(body["items"]) > 0
    durations = [g["dur_ns"] for g in body["items"]]
    assert durations == sorted(durations, reverse=True) and min(durations) >= 20_000
    for gap in body["items"]:
        assert gap["cause"] in ("host-bound", "launch-bound", "sync-bound", "unknown")
        assert gap["label"].startswith("GPU 0")
        window = _items(
            client,
            trace_id,
            start_ns=gap["start_ns"] + 1,
            end_ns=gap["end_ns"] - 1,
            lanes=str(gap["lane"]),
            max_items=1000,
        )
        assert window == [], "a gap has no work on its lane"


def test_timeline_errors(client: TestClient, ingest: Ingest) -> None:
    trace_id = ingest(H200)
    base = f"/api/v1/traces/{trace_id}/timeline"
    assert client.get("/api/v1/traces/nope/timeline").status_code == 404
    bad_window = client.get(base, params={"start_ns": 10, "end_ns": 10})
    assert bad_window.status_code == 422 and "empty window" in bad_window.json()["detail"]
    unknown = client.get(base, params={"lanes": "0,99"})
    assert unknown.status_code == 422 and "99" in unknown.json()["detail"]
    assert client.get(base, params={"lanes": "a,b"}).status_code == 422
    assert client.get(base, params={"max_items": 0}).status_code == 422


def test_timeline_of_a_queued_trace_is_refused(client: TestClient) -> None:
    trace_id = upload_trace(client, H200, "t.json.gz")
    response = client.get(f"/api/v1/traces/{trace_id}/timeline")
    assert response.status_code == 422 and "not ready" in response.json()["detail"]


def test_amd_lanes_are_labelled_by_queue(client: TestClient, ingest: Ingest) -> None:
    """rocprofv3 kernels carry their HSA queue (`args.queue`); lanes say "queue N" as AMD
    users know them, not "stream N"."""
    trace_id = ingest(Path(__file__).resolve().parents[1] / "data" / "rocprof" / "v3_run.zip")
    labels = [
        lane["label"] for lane in client.get(f"/api/v1/traces/{trace_id}/timeline").json()["lanes"]
    ]
    gpu = [label for label in labels if label.startswith("GPU")]
    assert gpu and all("queue" in label for label in gpu if "annotations" not in label), labels


def _sync_trace(stream: int) -> bytes:
    """A kernel on stream 7 and a device-wide "Context Sync" whose stream is `stream`, the
    way CUPTI's -1 reaches a Kineto file (as -1, or printed unsigned as 2^32 - 1)."""
    import json

    sync = {"ph": "X", "cat": "cuda_sync", "name": "Context Sync", "pid": 0, "tid": stream,
            "ts": 20.0, "dur": 5.0, "args": {"cuda_sync_kind": "Context Sync",
                                             "stream": stream, "device": 0}}  # fmt: skip
    kernel = {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10.0,
              "dur": 5.0, "args": {"stream": 7, "device": 0, "correlation": 1}}  # fmt: skip
    return json.dumps({"traceEvents": [kernel, sync]}).encode()


def test_a_sync_without_a_stream_is_named_so(client: TestClient, ingest: Ingest) -> None:
    for stream in (-1, 4294967295):
        trace_id = ingest(_sync_trace(stream), "sync.json")
        body = client.get(f"/api/v1/traces/{trace_id}/timeline").json()
        labels = sorted(lane["label"] for lane in body["lanes"])
        assert labels == ["GPU 0 · event/context/device syncs (no stream)", "GPU 0 · stream 7"]
