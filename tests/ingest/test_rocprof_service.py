"""rocprof uploads through the real ingest service, on SQLite and PostgreSQL: an archive of a
rocprofv3 output folder becomes one ready trace; a bad one fails whole, leaving no rows."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from backend.core.config import Settings
from backend.services.loading.pipeline import ingest_trace
from tests.factories import stored_events, upload_trace

DATA = Path(__file__).resolve().parents[1] / "data" / "rocprof"


def test_rocprofv3_archive_is_one_ready_trace(
    client: TestClient, engine: Engine, settings: Settings
) -> None:
    trace_id = upload_trace(client, DATA / "v3_run.tar.gz")
    assert ingest_trace(engine=engine, settings=settings, trace_id=trace_id) == "ready"
    trace = client.get(f"/api/v1/traces/{trace_id}").json()
    assert trace["format"] == "rocprofv3_csv"
    assert trace["event_counts"] == {
        "kernel": 5, "memcpy": 2, "memory": 2, "runtime": 9, "annotation": 2,
    }  # fmt: skip
    assert trace["devices"][0]["name"] == "AMD Instinct MI300X"
    assert any("no byte count" in w for w in trace["warnings"])
    kernels = client.get(f"/api/v1/traces/{trace_id}/kernels").json()["items"]
    assert [(k["name"][:12], k["count"], k["total_ns"]) for k in kernels] == [
        ("gemm_bf16_tn", 2, 178_000), ("ncclDevKerne", 1, 40_000), ("void vector_", 2, 23_000),
    ]  # fmt: skip
    args = next(e["args"] for e in stored_events(engine, trace_id) if e["kind"] == "kernel")
    assert args is not None
    assert args["grid_workitems"] == [1_048_576, 1, 1] and args["grid"] == [4096, 1, 1]
    assert args["queue"] == 1


def test_mixed_runs_fail_whole_with_the_files_named(
    client: TestClient, engine: Engine, settings: Settings
) -> None:
    trace_id = upload_trace(client, DATA / "bad" / "mixed_runs.zip")
    assert ingest_trace(engine=engine, settings=settings, trace_id=trace_id) == "failed"
    error = client.get(f"/api/v1/traces/{trace_id}").json()["error"]
    assert "different rocprof runs" in error and "host1/5151/" in error
    assert stored_events(engine, trace_id) == []
