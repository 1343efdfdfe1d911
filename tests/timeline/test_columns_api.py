"""`GET .../timeline/columns` (the canvas renderer's window form) and `.../timeline/lanes`:
the same items as the JSON window, as parallel arrays with exact offsets, names and
categories by index, and a mix that sums to each merged GPU block's event time."""

from __future__ import annotations

import gzip
import json
from decimal import Decimal
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.factories import Ingest, upload_trace
from tests.timeline.conftest import H200, H200_SMALL


def _columns(client: TestClient, trace_id: str, **params: object) -> dict[str, Any]:
    response = client.get(f"/api/v1/traces/{trace_id}/timeline/columns", params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _rows(cols: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The columns back as (lane, start_ns, dur_ns, name, category, id, depth) rows."""
    t0 = int(cols["trace_start_ns"])
    return [
        (cols["lane"][i], t0 + cols["start_ns"][i], cols["dur_ns"][i],
         cols["names"][cols["name"][i]], cols["categories"][cols["category"][i]],
         None if cols["id"][i] < 0 else cols["id"][i], cols["depth"][i])
        for i in range(cols["n"])
    ]  # fmt: skip


@pytest.mark.parametrize("window", [None, (0.4, 0.41), (0.1, 0.6)])
def test_columns_hold_the_windows_items(
    client: TestClient, ingest: Ingest, window: tuple[float, float] | None
) -> None:
    trace_id = ingest(H200_SMALL)
    lanes = client.get(f"/api/v1/traces/{trace_id}/timeline/lanes").json()
    t0, t1 = lanes["trace_start_ns"], lanes["trace_end_ns"]
    params: dict[str, object] = {"max_items": 3000}
    if window is not None:
        params |= {"start_ns": t0 + int((t1 - t0) * window[0]),
                   "end_ns": t0 + int((t1 - t0) * window[1])}  # fmt: skip
    verbose = client.get(f"/api/v1/traces/{trace_id}/timeline", params=params).json()
    cols = _columns(client, trace_id, **params)
    assert cols["mode"] == verbose["mode"] and cols["level"] == verbose["level"]
    assert cols["trace_start_ns"] == str(t0) and isinstance(cols["trace_start_ns"], str)
    expected = sorted(
        (i["lane"], i["start_ns"], i["dur_ns"], i["name"], i["category"], i["id"], i["depth"])
        for i in verbose["items"]
    )
    assert sorted(_rows(cols)) == expected
    assert len(cols["mix"]) == 4 * cols["n"]
    assert cols["mix_categories"] == ["compute", "communication", "memcpy", "memset"]


def test_merged_gpu_blocks_carry_their_events_time_by_category(
    client: TestClient, ingest: Ingest
) -> None:
    """Over the whole trace the blocks' mix adds up to the file's kernel and memset time."""
    trace_id = ingest(H200_SMALL)
    cols = _columns(client, trace_id, max_items=200)
    assert cols["mode"] == "blocks"
    lanes = client.get(f"/api/v1/traces/{trace_id}/timeline/lanes").json()["lanes"]
    gpu = {lane["lane"] for lane in lanes if lane["family"] == "gpu"}
    totals = [0, 0, 0, 0]
    for i in range(cols["n"]):
        if cols["lane"][i] in gpu:
            for c in range(4):
                totals[c] += cols["mix"][4 * i + c]
    doc = json.loads(gzip.decompress(H200_SMALL.read_bytes()), parse_float=Decimal)
    kernel_ns = sum(int(Decimal(e["dur"]) * 1000) for e in doc["traceEvents"]
                    if isinstance(e, dict) and e.get("cat") == "kernel")  # fmt: skip
    memset_ns = sum(int(Decimal(e["dur"]) * 1000) for e in doc["traceEvents"]
                    if isinstance(e, dict) and e.get("cat") == "gpu_memset")  # fmt: skip
    assert totals == [kernel_ns, 0, 0, memset_ns]


def test_lanes_list_the_tracks_with_their_depth(client: TestClient, ingest: Ingest) -> None:
    trace_id = ingest(H200_SMALL)
    body = client.get(f"/api/v1/traces/{trace_id}/timeline/lanes").json()
    by_label = {lane["label"]: lane for lane in body["lanes"]}
    assert by_label["GPU 0 · stream 7"]["max_depth"] == 0
    assert by_label["pid 447 · thread 447"]["max_depth"] >= 4
    assert body["trace_end_ns"] > body["trace_start_ns"]
    assert [lane["lane"] for lane in body["lanes"]] == sorted(
        lane["lane"] for lane in body["lanes"]
    )


def test_columns_and_lanes_refuse_bad_input(client: TestClient, ingest: Ingest) -> None:
    trace_id = ingest(H200)
    base = f"/api/v1/traces/{trace_id}/timeline/columns"
    assert client.get("/api/v1/traces/nope/timeline/columns").status_code == 404
    assert client.get("/api/v1/traces/nope/timeline/lanes").status_code == 404
    empty = client.get(base, params={"start_ns": 10, "end_ns": 10})
    assert empty.status_code == 422 and "empty window" in empty.json()["detail"]
    for value in (0, 100_001, "x"):
        assert client.get(base, params={"max_items": value}).status_code == 422
    assert client.get(base, params={"start_ns": 2**63}).status_code == 422
    unknown = client.get(base, params={"lanes": "0,999"})
    assert unknown.status_code == 422 and "999" in unknown.json()["detail"]


def test_columns_of_a_queued_trace_are_refused(client: TestClient) -> None:
    queued = upload_trace(client, H200, "q.json.gz")
    refused = client.get(f"/api/v1/traces/{queued}/timeline/columns")
    assert refused.status_code == 422 and "not ready" in refused.json()["detail"]
    assert client.get(f"/api/v1/traces/{queued}/timeline/lanes").status_code == 422
