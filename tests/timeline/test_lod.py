"""Level-of-detail correctness on real traces, on SQLite and PostgreSQL.

The expected answers are computed here from the parsed trace (busy time as the union of
each lane's intervals) or straight from the trace's stored events (which events touch a
window), not from the timeline index under test.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.engine import Engine

from backend.services.timeline.lanes import lane_key
from ingest import parse_file
from tests.factories import Ingest, stored_events
from tests.timeline.conftest import H200, SYNTHETIC

TRACES = [H200, SYNTHETIC]


def _true_busy(path: Path) -> dict[tuple[object, ...], int]:
    """Union length of each lane's intervals, from the parser's events."""
    lanes: dict[tuple[object, ...], list[tuple[int, int]]] = defaultdict(list)
    for e in parse_file(path, max_bytes=1 << 30, source=path.name).events:
        key = lane_key(e.kind.value, e.rank, e.device, e.stream, e.pid, e.tid)
        if key is not None:
            lanes[tuple(key)].append((e.start_ns, e.start_ns + e.dur_ns))
    busy: dict[tuple[object, ...], int] = {}
    for lane, intervals in lanes.items():
        total, end = 0, -1
        for lo, hi in sorted(intervals):
            if lo > end:
                total, end = total + hi - lo, hi
            elif hi > end:
                total, end = total + hi - end, hi
        busy[lane] = total
    return busy


def _window(client: TestClient, trace_id: str, **params: object) -> dict[str, object]:
    response = client.get(f"/api/v1/traces/{trace_id}/timeline", params=params)
    assert response.status_code == 200, response.text
    body: dict[str, object] = response.json()
    return body


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name.split(".")[0])
@pytest.mark.parametrize("max_items", [40, 300])
def test_blocks_sum_to_each_lanes_true_busy_time(
    client: TestClient, ingest: Ingest, path: Path, max_items: int
) -> None:
    trace_id = ingest(path)
    body = _window(client, trace_id, max_items=max_items)
    assert body["mode"] == "blocks"
    items = body["items"]
    assert isinstance(items, list) and 0 < len(items) <= max_items
    assert body["truncated"] is False
    summed: dict[int, int] = defaultdict(int)
    for item in items:
        summed[item["lane"]] += item["busy_ns"]
    truth = _true_busy(path)
    lanes = body["lanes"]
    assert isinstance(lanes, list)
    for lane in lanes:
        gpu = lane["family"] in ("gpu", "sync", "gpu_annotation")
        a, b = (lane["device"], lane["stream"]) if gpu else (lane["pid"], lane["tid"])
        expected = truth[(lane["family"], lane["rank"], a, b)]
        assert abs(summed[lane["lane"]] - expected) <= 0.01 * expected, lane["label"]


def _events_in(engine: Engine, trace_id: str, ws: int, we: int) -> set[int]:
    return {
        e["id"]
        for e in stored_events(engine, trace_id)
        if e["kind"] != "memory" and e["start_ns"] < we and e["start_ns"] + e["dur_ns"] >= ws
    }


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name.split(".")[0])
def test_zoomed_in_items_are_exactly_the_events_in_the_window(
    client: TestClient, engine: Engine, ingest: Ingest, path: Path
) -> None:
    trace_id = ingest(path)
    full = _window(client, trace_id)
    t0, t1 = int(full["trace_start_ns"]), int(full["trace_end_ns"])  # type: ignore[call-overload]
    checked = 0
    for frac, width in [(0.5, 200_000), (0.1, 50_000), (0.73, 1_000_000), (0.3, 10_000)]:
        ws = t0 + int((t1 - t0) * frac)
        body = _window(client, trace_id, start_ns=ws, end_ns=ws + width, max_items=5000)
        assert body["mode"] == "events"
        items = body["items"]
        assert isinstance(items, list)
        assert {i["id"] for i in items} == _events_in(engine, trace_id, ws, ws + width)
        checked += len(items)
    assert checked > 0


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name.split(".")[0])
def test_never_more_than_max_items(client: TestClient, ingest: Ingest, path: Path) -> None:
    trace_id = ingest(path)
    full = _window(client, trace_id)
    t0, t1 = int(full["trace_start_ns"]), int(full["trace_end_ns"])  # type: ignore[call-overload]
    width = t1 - t0
    modes = set()
    while width >= 10_000:
        for max_items in (5, 50, 500):
            for frac in (0.0, 0.37, 0.9):
                ws = t0 + int((t1 - t0 - width) * frac)
                body = _window(
                    client, trace_id, start_ns=ws, end_ns=ws + width, max_items=max_items
                )
                assert len(body["items"]) <= max_items  # type: ignore[arg-type]
                modes.add(body["mode"])
        width //= 4
    assert modes == {"blocks", "events"}


def test_lanes_filter_and_labels(client: TestClient, ingest: Ingest) -> None:
    trace_id = ingest(SYNTHETIC)
    full = _window(client, trace_id)
    labels = [lane["label"] for lane in full["lanes"]]  # type: ignore[attr-defined]
    assert labels[:2] == ["GPU 0 · stream 7 · annotations", "GPU 0 · stream 7"]
    assert "GPU 0 · stream 24 (NCCL)" in labels
    first_cpu = next(i for i, label in enumerate(labels) if label.startswith("pid"))
    assert all(label.startswith("GPU") for label in labels[:first_cpu]), "GPU lanes first"
    nccl = labels.index("GPU 0 · stream 24 (NCCL)")
    body = _window(client, trace_id, lanes=str(nccl), max_items=100_000)
    assert {i["lane"] for i in body["items"]} == {nccl}  # type: ignore[attr-defined]
    assert [lane["lane"] for lane in body["lanes"]] == [nccl]  # type: ignore[attr-defined]
    names = {i["name"] for i in body["items"]}  # type: ignore[attr-defined]
    assert all(n.startswith("ncclDevKernel") for n in names)


def test_nested_annotations_get_depths(client: TestClient, ingest: Ingest) -> None:
    trace_id = ingest(SYNTHETIC)
    full = _window(client, trace_id)
    lanes = full["lanes"]
    cpu_ann = next(la["lane"] for la in lanes if la["family"] == "annotation")  # type: ignore[attr-defined]
    steps = client.get(f"/api/v1/traces/{trace_id}/timeline/steps").json()["items"]
    step = steps[1]
    body = _window(
        client,
        trace_id,
        start_ns=step["start_ns"],
        end_ns=step["end_ns"],
        lanes=str(cpu_ann),
        max_items=5000,
    )
    items = body["items"]
    assert body["mode"] == "events"
    top = [i for i in items if i["depth"] == 0]  # type: ignore[attr-defined]
    assert any(i["name"] == step["name"] for i in top)
    assert any(i["depth"] > 0 for i in items)  # type: ignore[attr-defined]


def test_reingest_replaces_the_index(client: TestClient, engine: Engine, ingest: Ingest) -> None:
    from backend.core.config import get_settings
    from backend.services.loading.pipeline import ingest_trace

    trace_id = ingest(H200)
    before = _window(client, trace_id, max_items=40)
    with engine.begin() as conn:
        conn.execute(text("UPDATE traces SET status = 'queued' WHERE id = :t"), {"t": trace_id})
    assert ingest_trace(engine=engine, settings=get_settings(), trace_id=trace_id) == "ready"
    assert _window(client, trace_id, max_items=40) == before
