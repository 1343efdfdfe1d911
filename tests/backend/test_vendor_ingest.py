"""Nsight Systems and Nsight Compute uploads through the real API and ingest service, on
SQLite and PostgreSQL: kernel stats equal `nsys stats`, roofline args and device peaks are
stored, and every failure leaves a failed trace with no event rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from backend.core.bulk_insert import BATCH_SIZE
from backend.core.config import Settings
from ingest import ParseError, parse_file
from tests.factories import stored_events, upload_and_ingest
from tests.ingest.nsys_files import (
    NCU,
    NSYS,
    copy_of,
    corrupt_table_page,
    kern_sum,
    replicate_kernels,
)


def _ingest(
    client: TestClient, engine: Engine, settings: Settings, name: str, data: bytes
) -> dict[str, Any]:
    """The trace as the API gives it after its ingest, whatever the outcome."""
    trace_id = upload_and_ingest(client, engine, settings, data, name, expect=None)
    body: dict[str, Any] = client.get(f"/api/v1/traces/{trace_id}").json()
    return body


def _event_rows(engine: Engine, trace_id: str) -> int:
    return len(stored_events(engine, trace_id))


@pytest.mark.parametrize("fixture", ["train_step", "nccl_2gpu"])
def test_nsys_export_is_stored_with_kernel_stats_equal_to_nsys_stats(
    client: TestClient, engine: Engine, settings: Settings, fixture: str
) -> None:
    trace = _ingest(
        client, engine, settings, f"{fixture}.sqlite", (NSYS / f"{fixture}.sqlite").read_bytes()
    )
    assert trace["status"] == "ready", trace["error"]
    assert trace["format"] == "nsys_sqlite"
    assert trace["devices"][0]["name"] == "NVIDIA H200"
    assert trace["devices"][0]["peak_dram_bytes_per_s"] == 4_814_304_000_000
    got = client.get(f"/api/v1/traces/{trace['id']}/kernels", params={"limit": 10}).json()
    want = kern_sum(NSYS / f"{fixture}_cuda_gpu_kern_sum.csv")[:10]
    assert [(k["name"], k["count"], k["total_ns"]) for k in got["items"]] == want
    assert _event_rows(engine, trace["id"]) == sum(trace["event_counts"].values())


def test_ncu_csv_is_stored_with_roofline_args_and_device_peaks(
    client: TestClient, engine: Engine, settings: Settings
) -> None:
    trace = _ingest(
        client, engine, settings, "gemm.csv", (NCU / "gemm_elementwise_raw.csv").read_bytes()
    )
    assert trace["status"] == "ready", trace["error"]
    assert trace["format"] == "ncu_csv" and trace["event_counts"] == {"kernel": 4}
    (gpu,) = trace["devices"]
    assert gpu["peak_flops_tensor"] > 8e14 and gpu["peak_dram_bytes_per_s"] > 4.5e12
    rows = stored_events(engine, trace["id"])
    gemm_args = [e["args"] for e in rows if e["name"].startswith("nvjet")]
    assert [a["flops_tensor"] for a in gemm_args] == [2 * 4096**3] * 2


def _mid_stream_corruption(tmp: Path) -> bytes:
    """Enough kernels that the first insert batch is written before the damaged rows."""
    path = replicate_kernels(copy_of(NSYS / "train_step.sqlite", tmp), 45)
    corrupt_table_page(path, "CUPTI_ACTIVITY_KIND_RUNTIME", rows_only=True)
    read = 0
    with pytest.raises(ParseError, match="truncated or corrupt"):
        for _ in parse_file(path).events:
            read += 1
    assert read > BATCH_SIZE  # at least one batch was inserted before the failure
    return path.read_bytes()


@pytest.mark.parametrize(
    ("name", "make", "message"),
    [
        ("late.sqlite", _mid_stream_corruption, "truncated or corrupt"),
        (
            "half.sqlite",
            lambda t: (NSYS / "copies.sqlite").read_bytes()[:60_000],
            "truncated or corrupt",
        ),
        ("app.sqlite", lambda t: b"SQLite format 3\x00" + bytes(100), "truncated or corrupt"),
        (
            "run.nsys-rep",
            lambda t: b"NVIDIA Tegra Profiler Report 1.\n" + bytes(64),
            "nsys export --type sqlite -o run.sqlite run.nsys-rep",
        ),
        ("k.ncu-rep", lambda t: b"NVR\x00" + bytes(64), "ncu --import k.ncu-rep --csv --page raw"),
        (
            "prof.csv",
            lambda t: b"==PROF== Connected to process 1\n==PROF== Disconnected\n",
            "no Nsight Compute CSV header",
        ),
    ],
)
def test_bad_vendor_file_fails_cleanly_with_no_rows(
    client: TestClient,
    engine: Engine,
    settings: Settings,
    tmp_path: Path,
    name: str,
    make: object,
    message: str,
) -> None:
    assert callable(make)
    trace = _ingest(client, engine, settings, name, make(tmp_path))
    assert trace["status"] == "failed"
    assert message in trace["error"] and name in trace["error"]
    assert _event_rows(engine, trace["id"]) == 0
    assert client.get(f"/api/v1/traces/{trace['id']}/kernels").json()["items"] == []
