"""`GET /traces/{id}/events.parquet`: the stored events as a Parquet file any reader opens,
checked against the source file read with plain `json` (not perfdash's parser)."""

from __future__ import annotations

import gzip
import io
import json
from collections import Counter
from decimal import Decimal

import pyarrow.parquet as pq
from fastapi.testclient import TestClient

from tests.factories import Ingest, upload_trace
from tests.timeline.conftest import H200

COLUMNS = [
    "id", "kind", "name", "start_ns", "dur_ns", "rank", "device", "stream", "pid", "tid",
    "correlation", "args",
]  # fmt: skip


def _source_kernels(path: object) -> Counter[tuple[str, int]]:
    """(name, exact ns) of every kernel event in the raw file, durations decimal-exact."""
    with gzip.open(str(path), "rb") as f:
        doc = json.load(f, parse_float=Decimal)
    return Counter(
        (e["name"], int(Decimal(str(e["dur"])) * 1000))
        for e in doc["traceEvents"]
        if e.get("ph") == "X" and e.get("cat") == "kernel"
    )


def test_the_download_opens_in_pyarrow_with_the_documented_columns_and_the_source_kernels(
    client: TestClient, ingest: Ingest
) -> None:
    trace_id = ingest(H200)
    response = client.get(f"/api/v1/traces/{trace_id}/events.parquet")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/vnd.apache.parquet"
    assert f"{trace_id}.events.parquet" in response.headers["content-disposition"]
    table = pq.read_table(io.BytesIO(response.content))
    assert table.column_names == COLUMNS
    trace = client.get(f"/api/v1/traces/{trace_id}").json()
    assert table.num_rows == sum(trace["event_counts"].values())
    rows = table.to_pylist()
    assert sorted(r["id"] for r in rows) == list(range(1, len(rows) + 1))
    kernels = Counter((r["name"], r["dur_ns"]) for r in rows if r["kind"] == "kernel")
    assert kernels == _source_kernels(H200)
    assert all(json.loads(r["args"]) for r in rows if r["args"] is not None)


def test_a_trace_that_is_not_ready_or_not_there_has_no_download(client: TestClient) -> None:
    assert client.get("/api/v1/traces/nope/events.parquet").status_code == 404
    queued = upload_trace(client, H200, "queued.json.gz")  # never ingested here
    response = client.get(f"/api/v1/traces/{queued}/events.parquet")
    assert response.status_code == 422
    assert "not ready" in response.json()["detail"]
