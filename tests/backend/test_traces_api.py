"""The /api/v1/traces contract, on SQLite and PostgreSQL, with the real ingest service.

The worker's task is a thin adapter over `loading.pipeline.ingest_trace`; calling the service
here keeps these tests fast. tests/workers/ runs the same path through a real worker.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from backend.core.config import Settings
from backend.models import KernelStatRecord
from backend.services.loading.pipeline import ingest_trace
from backend.services.traces.blob_store import blob_path
from tests.factories import stored_events, upload, upload_trace

KERNEL_SUMS = (
    Path(__file__).resolve().parents[1] / "data" / "torch" / "h200_train_step.kernel_sums.json"
)


def _row_count(engine: Engine, table: type, trace_id: str) -> int:
    with engine.connect() as conn:
        return int(
            conn.execute(select(func.count()).where(table.trace_id == trace_id)).scalar_one()
        )  # type: ignore[attr-defined]


def test_upload_is_queued_and_enqueued(
    client: TestClient, settings: Settings, h200_trace: Path
) -> None:
    body = upload(client, [(h200_trace.name, h200_trace.read_bytes())])
    assert body["status"] == "queued"
    assert body["duplicate"] is False
    queued = list((settings.broker_dir / "queue").glob("*"))
    assert len(queued) == 1, "the ingest task must be sent to the broker after the commit"
    assert str(body["id"]) in queued[0].read_text()


def test_ready_trace_reports_kernels_equal_to_raw_json_sums(
    client: TestClient, engine: Engine, settings: Settings, h200_trace: Path
) -> None:
    trace_id = upload_trace(client, h200_trace, "step.json.gz")
    assert ingest_trace(engine=engine, settings=settings, trace_id=trace_id) == "ready"

    trace = client.get(f"/api/v1/traces/{trace_id}").json()
    assert trace["status"] == "ready"
    assert trace["format"] == "torch_profiler"
    assert trace["devices"][0]["name"] == "NVIDIA H200"
    assert trace["event_counts"]["kernel"] == 51
    assert trace["duration_ns"] > 0

    expected = json.loads(KERNEL_SUMS.read_text())["kernels"]
    got = client.get(f"/api/v1/traces/{trace_id}/kernels", params={"limit": 100}).json()
    assert got["count"] == len(expected)
    assert [(k["name"], k["count"], k["total_ns"]) for k in got["items"]] == [
        (k["name"], k["count"], k["total_ns"]) for k in expected
    ]
    assert abs(sum(k["pct"] for k in got["items"]) - 100.0) < 0.05
    top = client.get(f"/api/v1/traces/{trace_id}/kernels").json()["items"]
    assert len(top) == 10
    assert top[0]["mean_ns"] == top[0]["total_ns"] // top[0]["count"]
    assert top[0]["min_ns"] <= top[0]["mean_ns"] <= top[0]["max_ns"]


def test_same_bytes_return_the_existing_trace(client: TestClient, h200_trace: Path) -> None:
    first = upload(client, [("a.json.gz", h200_trace.read_bytes())])
    second = upload(client, [("b.json.gz", h200_trace.read_bytes())])
    assert second["id"] == first["id"]
    assert second["duplicate"] is True
    assert client.get("/api/v1/traces").json()["count"] == 1


def test_delete_removes_trace_dataset_stats_and_blob(
    client: TestClient, engine: Engine, settings: Settings, h200_trace: Path
) -> None:
    trace_id = upload_trace(client, h200_trace, "t.json.gz")
    ingest_trace(engine=engine, settings=settings, trace_id=trace_id)
    sha = client.get(f"/api/v1/traces/{trace_id}").json()["blob_sha256"]
    assert stored_events(engine, trace_id)
    assert (settings.blob_dir / "datasets" / trace_id).is_dir()

    assert client.delete(f"/api/v1/traces/{trace_id}").status_code == 204
    assert client.get(f"/api/v1/traces/{trace_id}").status_code == 404
    assert not (settings.blob_dir / "datasets" / trace_id).exists()
    assert _row_count(engine, KernelStatRecord, trace_id) == 0
    assert not blob_path(settings.blob_dir, sha).exists()


def _truncated(trace: Path) -> bytes:
    raw = gzip.decompress(trace.read_bytes())
    return raw[: len(raw) // 2]


@pytest.mark.parametrize(
    ("name", "make", "message"),
    [
        ("truncated.json", _truncated, "invalid JSON"),
        ("truncated.json.gz", lambda t: t.read_bytes()[:4000], "gzip stream is truncated"),
        ("notes.txt", lambda t: b"hello, this is not a trace\n", "not a trace perfdash recognises"),
        ("other.json", lambda t: b'{"traceEvents": 5}', "no 'traceEvents' list"),
        ("sqlite.db", lambda t: b"SQLite format 3\x00" + bytes(100), "truncated or corrupt"),
    ],
)
def test_bad_trace_fails_with_a_clear_error_and_no_dataset(
    client: TestClient,
    engine: Engine,
    settings: Settings,
    h200_trace: Path,
    name: str,
    make: object,
    message: str,
) -> None:
    assert callable(make)
    trace_id = upload_trace(client, make(h200_trace), name)
    assert ingest_trace(engine=engine, settings=settings, trace_id=trace_id) == "failed"
    trace = client.get(f"/api/v1/traces/{trace_id}").json()
    assert trace["status"] == "failed"
    assert message in trace["error"]
    assert name in trace["error"] and trace["blob_sha256"] not in trace["error"]
    assert stored_events(engine, trace_id) == []
    assert not (settings.blob_dir / "datasets" / trace_id).exists()
    assert client.get(f"/api/v1/traces/{trace_id}/kernels").json()["items"] == []


def test_empty_upload_is_rejected_and_stores_nothing(
    client: TestClient, settings: Settings
) -> None:
    response = client.post("/api/v1/traces", files={"file": ("empty.json", b"")})
    assert response.status_code == 422
    assert "empty" in response.json()["detail"]
    assert client.get("/api/v1/traces").json()["count"] == 0
    assert not [p for p in settings.blob_dir.rglob("*") if p.is_file()]


def test_oversize_upload_is_413_and_stores_nothing(client: TestClient, settings: Settings) -> None:
    big = b"x" * (settings.max_upload_bytes + 1)
    response = client.post("/api/v1/traces", files={"file": ("big.json", big)})
    assert response.status_code == 413
    assert "limit" in response.json()["detail"]
    assert client.get("/api/v1/traces").json()["count"] == 0
    assert not [p for p in settings.blob_dir.rglob("*") if p.is_file()]


def test_unknown_trace_is_404(client: TestClient) -> None:
    assert client.get("/api/v1/traces/nope").status_code == 404
    assert client.get("/api/v1/traces/nope/kernels").status_code == 404
    assert client.delete("/api/v1/traces/nope").status_code == 404


def test_reingest_is_idempotent(
    client: TestClient, engine: Engine, settings: Settings, h200_trace: Path
) -> None:
    trace_id = upload_trace(client, h200_trace, "t.json.gz")
    ingest_trace(engine=engine, settings=settings, trace_id=trace_id)
    events = stored_events(engine, trace_id)
    assert ingest_trace(engine=engine, settings=settings, trace_id=trace_id) == "ready"
    assert stored_events(engine, trace_id) == events
    assert len(list((settings.blob_dir / "datasets" / trace_id).iterdir())) == 1


def test_healthz_checks_database_and_broker(client: TestClient) -> None:
    body = client.get("/healthz").json()
    assert body == {"ok": True, "database": "ok", "broker": "ok"}
