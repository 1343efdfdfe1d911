"""Block category mixes and lane depths on real traces, on SQLite and PostgreSQL.

Expected mixes come from the parser's own events (each GPU event's kind, summed per lane),
and expected depths from raw windows of the whole trace (the windows' own stack), never
from the index under test.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.engine import Engine

from backend.core.config import get_settings
from backend.services.datasets import reader
from backend.services.datasets.layout import BLOCKS_FILE
from backend.services.timeline import block_index
from backend.services.timeline.lanes import lane_key
from ingest import parse_file
from ingest.classify import is_communication_name
from tests.factories import Ingest
from tests.timeline.conftest import H200, H200_SMALL, REPO, SYNTHETIC

NSYS = REPO / "tests" / "data" / "nsys"
TRACES = [H200, H200_SMALL, SYNTHETIC, NSYS / "copies.sqlite", NSYS / "nccl_2gpu.sqlite"]
_OLD_BLOCK_COLUMNS = [
    "level", "lane", "start_ns", "end_ns", "events", "children", "busy_ns", "top_name",
]  # fmt: skip


def _id(path: Path) -> str:
    return path.name.split(".")[0]


def _window(client: TestClient, trace_id: str, **params: object) -> dict[str, object]:
    response = client.get(f"/api/v1/traces/{trace_id}/timeline", params=params)
    assert response.status_code == 200, response.text
    body: dict[str, object] = response.json()
    return body


def _lane_id(lane: dict[str, object]) -> tuple[object, ...]:
    gpu = lane["family"] in ("gpu", "sync", "gpu_annotation")
    a, b = (lane["device"], lane["stream"]) if gpu else (lane["pid"], lane["tid"])
    return (lane["family"], lane["rank"], a, b)


def _true_mix(path: Path) -> dict[tuple[object, ...], list[int]]:
    """Per GPU lane, summed durations by (compute, communication, memcpy, memset), from the
    parser's event kinds."""
    mixes: dict[tuple[object, ...], list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for e in parse_file(path, max_bytes=1 << 30, source=path.name).events:
        key = lane_key(e.kind.value, e.rank, e.device, e.stream, e.pid, e.tid)
        if key is None or key.family != "gpu":
            continue
        slot = {"memcpy": 2, "memset": 3}.get(e.kind.value, 0)
        if e.kind.value == "kernel" and is_communication_name(e.name):
            slot = 1
        mixes[tuple(key)][slot] += e.dur_ns
    return mixes


def _all_blocks(client: TestClient, trace_id: str) -> dict[str, object]:
    """A whole-trace window in blocks mode with every block of its level (not truncated)."""
    for max_items in (40, 300, 2000):
        body = _window(client, trace_id, max_items=max_items)
        if body["mode"] == "blocks" and body["truncated"] is False:
            return body
    raise AssertionError("no untruncated blocks window")


@pytest.mark.parametrize("path", TRACES, ids=_id)
def test_a_levels_mixes_sum_to_each_gpu_lanes_event_time_by_kind(
    client: TestClient, ingest: Ingest, path: Path
) -> None:
    body = _all_blocks(client, ingest(path))
    truth = _true_mix(path)
    lanes = {lane["lane"]: lane for lane in body["lanes"]}  # type: ignore[attr-defined]
    summed: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for item in body["items"]:  # type: ignore[attr-defined]
        gpu = lanes[item["lane"]]["family"] == "gpu"
        assert (item["mix"] is not None) == (gpu and item["busy_ns"] > 0), item
        if item["mix"] is not None:
            assert sum(item["mix"]) >= item["busy_ns"], "summed durations cover the union"
            summed[item["lane"]] = [
                a + b for a, b in zip(summed[item["lane"]], item["mix"], strict=True)
            ]
    gpu_lanes = [lane for lane in lanes.values() if lane["family"] == "gpu"]
    assert gpu_lanes
    for lane in gpu_lanes:
        assert summed[lane["lane"]] == truth[_lane_id(lane)], lane["label"]


def test_fixtures_cover_every_category() -> None:
    seen = [0, 0, 0, 0]
    for path in TRACES:
        for mix in _true_mix(path).values():
            seen = [a + (b > 0) for a, b in zip(seen, mix, strict=True)]
    assert all(seen), seen


def _raw_max_depths(client: TestClient, trace_id: str, lanes: list[int]) -> dict[int, int]:
    """Per lane, the deepest depth a raw window of the whole trace gives its events."""
    out = {}
    for lane in lanes:
        body = _window(client, trace_id, lanes=str(lane), max_items=100_000)
        assert body["mode"] == "events"
        items = body["items"]
        assert isinstance(items, list) and items
        out[lane] = max(i["depth"] for i in items)
    return out


@pytest.mark.parametrize("path", TRACES, ids=_id)
def test_lane_max_depth_is_the_raw_windows_deepest_depth(
    client: TestClient, ingest: Ingest, path: Path
) -> None:
    trace_id = ingest(path)
    lanes = _window(client, trace_id, max_items=10)["lanes"]
    assert isinstance(lanes, list)
    stored = {lane["lane"]: lane["max_depth"] for lane in lanes}
    assert _raw_max_depths(client, trace_id, list(stored)) == stored
    if path == H200_SMALL:  # nested cpu_ops; GPU streams run one kernel at a time
        cpu = [lane["max_depth"] for lane in lanes if lane["family"] == "cpu"]
        assert max(cpu) >= 4
        assert {lane["max_depth"] for lane in lanes if lane["family"] == "gpu"} == {0}


def test_datasets_without_the_mix_columns_still_read(
    client: TestClient, engine: Engine, ingest: Ingest
) -> None:
    trace_id = ingest(H200)
    before = _all_blocks(client, trace_id)
    assert any(i["mix"] for i in before["items"])  # type: ignore[attr-defined]
    with engine.connect() as conn:
        query = text("SELECT dataset FROM traces WHERE id = :t")
        dataset = conn.execute(query, {"t": trace_id}).scalar_one()
    path = get_settings().blob_dir / "datasets" / trace_id / dataset / BLOCKS_FILE
    old = pq.read_table(path).select(_OLD_BLOCK_COLUMNS)  # as written before the mix
    pq.write_table(old, path)
    assert pq.read_schema(path).names == _OLD_BLOCK_COLUMNS
    reader._blocks_table.cache_clear()  # the file changed under its path: forget it
    block_index._index.cache_clear()
    after = _all_blocks(client, trace_id)
    assert all(i["mix"] is None for i in after["items"])  # type: ignore[attr-defined]
    for item in before["items"]:  # type: ignore[attr-defined]
        item["mix"] = None
    assert after == before
    sql = (
        "SELECT sum(compute_ns + communication_ns + memcpy_ns + memset_ns), count(*) FROM {blocks}"
    )
    events = path.with_name("events.parquet")
    assert reader.query_file(events, sql) == [(0, old.num_rows)]
