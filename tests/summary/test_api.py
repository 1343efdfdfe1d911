"""`/traces/{id}/summary` and `/traces/{id}/kernels` on SQLite and PostgreSQL, real ingest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from alembic import command
from fastapi.testclient import TestClient
from sqlalchemy import inspect
from sqlalchemy.engine import Engine

from backend.core.config import Settings
from backend.core.migrate import alembic_config
from backend.services.loading.pipeline import ingest_trace
from tests.factories import upload_and_ingest, upload_trace

SYNTHETIC = (
    Path(__file__).resolve().parents[2]
    / "backend"
    / "sample_data"
    / "synthetic_train_8gpu_rank0.pt.trace.json.gz"
)


def _kernels(client: TestClient, trace_id: str, **params: Any) -> dict[str, Any]:
    response = client.get(f"/api/v1/traces/{trace_id}/kernels", params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_summary_is_served_once_ready(
    client: TestClient, engine: Engine, settings: Settings, h200_trace: Path
) -> None:
    trace_id = upload_trace(client, h200_trace, "a.json.gz")
    queued = client.get(f"/api/v1/traces/{trace_id}/summary").json()
    assert queued == {"trace_id": trace_id, "status": "queued", "summary": None}
    assert ingest_trace(engine=engine, settings=settings, trace_id=trace_id) == "ready"
    summary = client.get(f"/api/v1/traces/{trace_id}/summary").json()["summary"]
    assert summary["version"] == 1
    assert summary["gpu"]["kernels"] == 51
    assert summary["launch"]["matched"] == 51
    assert [s["step"] for s in summary["steps"]["steps"]] == [2, 3, 4]
    assert summary["transfers"]["pageable_pct"] == 50.0
    assert summary["idle_gaps"][0]["dur_ns"] >= summary["idle_gaps"][-1]["dur_ns"]
    assert client.get("/api/v1/traces/nope/summary").status_code == 404


def test_kernels_keep_their_contract_and_add_percentiles_and_launch_args(
    client: TestClient, engine: Engine, settings: Settings, h200_trace: Path
) -> None:
    trace_id = upload_and_ingest(client, engine, settings, h200_trace)
    body = _kernels(client, trace_id)
    assert {"items", "count", "total_kernel_ns", "limit"} <= body.keys()
    assert (len(body["items"]), body["count"], body["limit"]) == (10, 12, 10)
    top = body["items"][0]
    assert top["min_ns"] <= top["p50_ns"] <= top["p95_ns"] <= top["max_ns"]
    assert top["grid"] and top["block"] and top["registers_per_thread"] is not None
    assert top["category"] == "compute"
    totals = [k["total_ns"] for k in _kernels(client, trace_id, limit=100)["items"]]
    assert totals == sorted(totals, reverse=True) and sum(totals) == body["total_kernel_ns"]


@pytest.mark.parametrize(
    ("sort", "field", "descending"),
    [
        ("total", "total_ns", True),
        ("count", "count", True),
        ("mean", "mean_ns", True),
        ("max", "max_ns", True),
        ("p95", "p95_ns", True),
        ("name", "name", False),
    ],
)
def test_kernels_sort(
    client: TestClient,
    engine: Engine,
    settings: Settings,
    h200_trace: Path,
    sort: str,
    field: str,
    descending: bool,
) -> None:
    trace_id = upload_and_ingest(client, engine, settings, h200_trace)
    values = [k[field] for k in _kernels(client, trace_id, sort=sort, limit=100)["items"]]
    assert len(values) == 12
    assert values == sorted(values, reverse=descending)


def test_kernels_paging_and_search(
    client: TestClient, engine: Engine, settings: Settings, h200_trace: Path
) -> None:
    trace_id = upload_and_ingest(client, engine, settings, h200_trace)
    everything = [k["name"] for k in _kernels(client, trace_id, limit=100)["items"]]
    pages = [
        k["name"]
        for offset in (0, 5, 10)
        for k in _kernels(client, trace_id, limit=5, offset=offset)["items"]
    ]
    assert pages == everything
    found = _kernels(client, trace_id, q="ELEMENTWISE", limit=100)
    assert found["count"] == len(found["items"]) > 0
    assert all("elementwise" in k["name"].lower() for k in found["items"])
    assert _kernels(client, trace_id, q="100%_no_such")["count"] == 0  # % is literal
    assert client.get(f"/api/v1/traces/{trace_id}/kernels", params={"sort": "x"}).status_code == 422
    assert client.get("/api/v1/traces/nope/kernels").status_code == 404


def test_kernels_grouped_by_stream_device_and_launching_op(
    client: TestClient, engine: Engine, settings: Settings
) -> None:
    trace_id = upload_and_ingest(client, engine, settings, SYNTHETIC)
    total = _kernels(client, trace_id)["total_kernel_ns"]
    streams = _kernels(client, trace_id, group="stream", limit=100)
    assert [(g["stream"], g["device"], g["rank"]) for g in streams["items"]] == [
        (7, 0, 0),
        (24, 0, 0),
    ]
    assert sum(g["total_ns"] for g in streams["items"]) == total
    assert streams["items"][1]["top_kernel"].startswith("ncclDevKernel_AllReduce")
    (device,) = _kernels(client, trace_id, group="device")["items"]
    assert (device["key"], device["total_ns"], device["pct"]) == ("rank 0 GPU 0", total, 100.0)
    ops = _kernels(client, trace_id, group="cpu_op", limit=100)
    assert ops["items"][0]["key"] == "aten::mm"
    assert sum(g["total_ns"] for g in ops["items"]) == total  # every kernel's op is known
    comms = _kernels(client, trace_id, group="cpu_op", q="record_param")["items"]
    assert [g["key"] for g in comms] == ["record_param_comms"]
    by_name = _kernels(client, trace_id, group="cpu_op", sort="name", limit=100)["items"]
    assert [g["key"] for g in by_name] == sorted(g["key"] for g in by_name)


def test_migration_0003_downgrades_and_upgrades_again(settings: Settings, engine: Engine) -> None:
    config = alembic_config(settings.resolved_database_url)
    command.downgrade(config, "0002")
    engine.dispose()
    assert "kernel_group_stats" not in inspect(engine).get_table_names()
    assert "p95_ns" not in {c["name"] for c in inspect(engine).get_columns("kernel_stats")}
    command.upgrade(config, "head")
    engine.dispose()
    assert "p95_ns" in {c["name"] for c in inspect(engine).get_columns("kernel_stats")}
