"""Chrome-trace export: valid for Perfetto, and it reads back with the same kernel stats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.factories import Ingest
from tests.timeline.conftest import H200, SYNTHETIC

KERNEL_FIELDS = ("name", "count", "total_ns", "min_ns", "max_ns")


def _kernels(client: TestClient, trace_id: str) -> list[tuple[object, ...]]:
    items = client.get(f"/api/v1/traces/{trace_id}/kernels", params={"limit": 100_000}).json()
    return [tuple(k[f] for f in KERNEL_FIELDS) for k in items["items"]]


@pytest.mark.parametrize("path", [H200, SYNTHETIC], ids=lambda p: p.name.split(".")[0])
def test_export_reads_back_with_the_same_kernel_stats(
    client: TestClient, ingest: Ingest, path: Path
) -> None:
    trace_id = ingest(path)
    response = client.get(f"/api/v1/traces/{trace_id}/export.json")
    assert response.status_code == 200
    assert "attachment" in response.headers["content-disposition"]
    doc = json.loads(response.content)
    phases = {e["ph"] for e in doc["traceEvents"]}
    assert phases <= {"X", "i", "M"} and "X" in phases
    assert all("ts" in e for e in doc["traceEvents"] if e["ph"] != "M")
    assert {"process_name", "thread_name"} <= {e["name"] for e in doc["traceEvents"]}

    again = ingest(response.content, "export.json")
    back = client.get(f"/api/v1/traces/{again}").json()
    assert back["format"] == "torch_profiler"
    original = client.get(f"/api/v1/traces/{trace_id}").json()
    assert back["event_counts"] == original["event_counts"]
    assert _kernels(client, again) == _kernels(client, trace_id)
