"""Area selection summaries (`/timeline/area`): a hand-made trace whose answer is known,
and a real trace summed from its raw JSON (`raw_chrome`), not through perfdash."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.factories import Ingest
from tests.timeline.conftest import H200
from tests.timeline.raw_chrome import GPU_WORK, raw_events, read_doc

Sums = dict[str, tuple[int, int, int]]  # name -> count, total_ns, wall_ns


def _hand_made() -> bytes:
    """Kernels on stream 7 and a CPU op, times in µs (ns = ts * 1000, no base)."""

    def kernel(name: str, ts: float, dur: float) -> dict[str, Any]:
        return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts,
                "dur": dur, "args": {"stream": 7, "device": 0}}  # fmt: skip

    op = {"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": 5.0, "dur": 60.0}
    events = [
        kernel("k0", 0.0, 15.0),  # ends where the range starts: outside
        kernel("k1", 10.0, 10.0),  # 10-20 µs: 5 µs inside
        kernel("k1", 30.0, 10.0),  # inside
        kernel("k2", 50.0, 20.0),  # 50-70 µs: 5 µs inside
        kernel("k3", 55.0, 1.0),  # starts where the range ends: outside
        op,  # 5-65 µs: 40 µs inside
    ]
    return json.dumps({"traceEvents": events}).encode()


def _area(client: TestClient, trace_id: str, **params: Any) -> dict[str, Any]:
    response = client.get(f"/api/v1/traces/{trace_id}/timeline/area", params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _sums(body: dict[str, Any]) -> Sums:
    return {n["name"]: (n["count"], n["total_ns"], n["wall_ns"]) for n in body["names"]}


def _lanes(client: TestClient, trace_id: str) -> list[dict[str, Any]]:
    lanes: list[dict[str, Any]] = client.get(f"/api/v1/traces/{trace_id}/timeline").json()["lanes"]
    return lanes


def test_a_hand_made_area_clips_at_both_edges(client: TestClient, ingest: Ingest) -> None:
    trace_id = ingest(_hand_made(), "area.json")
    body = _area(client, trace_id, start_ns=15_000, end_ns=55_000)
    assert body["names"] == [
        {"name": "op", "category": "cpu_op", "count": 1, "total_ns": 40_000, "wall_ns": 60_000,
         "avg_ns": 60_000},
        {"name": "k1", "category": "compute", "count": 2, "total_ns": 15_000, "wall_ns": 20_000,
         "avg_ns": 10_000},
        {"name": "k2", "category": "compute", "count": 1, "total_ns": 5_000, "wall_ns": 20_000,
         "avg_ns": 20_000},
    ]  # fmt: skip
    assert body["categories"] == [
        {"category": "cpu_op", "count": 1, "total_ns": 40_000},
        {"category": "compute", "count": 3, "total_ns": 20_000},
    ]
    assert (body["start_ns"], body["end_ns"], body["truncated"]) == (15_000, 55_000, False)

    (gpu,) = [lane["lane"] for lane in _lanes(client, trace_id) if lane["family"] == "gpu"]
    only_gpu = _area(client, trace_id, start_ns=15_000, end_ns=55_000, lanes=str(gpu))
    assert [n["name"] for n in only_gpu["names"]] == ["k1", "k2"]
    assert only_gpu["categories"] == [{"category": "compute", "count": 3, "total_ns": 20_000}]

    cut = _area(client, trace_id, start_ns=15_000, end_ns=55_000, limit=1)
    assert [n["name"] for n in cut["names"]] == ["op"] and cut["truncated"] is True
    assert cut["categories"] == body["categories"]

    empty = _area(client, trace_id, start_ns=100_000, end_ns=200_000)
    assert (empty["names"], empty["categories"], empty["truncated"]) == ([], [], False)
    inside = _area(client, trace_id, start_ns=31_000, end_ns=32_000)  # inside k1 and op
    assert _sums(inside) == {"k1": (1, 1_000, 10_000), "op": (1, 1_000, 60_000)}


def _raw_sums(stream: int | None, ws: int, we: int) -> Sums:
    """Kernels, copies and memsets of the raw file overlapping [ws, we), per name."""
    sums: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for e in raw_events(read_doc(H200)):
        if e.cat not in GPU_WORK or (stream is not None and e.args.get("stream") != stream):
            continue
        if e.start_ns < we and (e.start_ns >= ws or e.end_ns > ws):
            s = sums[e.name]
            s[0] += 1
            s[1] += min(e.end_ns, we) - max(e.start_ns, ws)
            s[2] += e.dur_ns
    return {name: (c, t, w) for name, (c, t, w) in sums.items()}


def test_gpu_lanes_of_a_real_trace_sum_as_the_raw_file(client: TestClient, ingest: Ingest) -> None:
    trace_id = ingest(H200)
    gpu = {
        lane["lane"]: lane["stream"] for lane in _lanes(client, trace_id) if lane["family"] == "gpu"
    }
    kernels = sorted(
        (e for e in raw_events(read_doc(H200)) if e.cat == "kernel"), key=lambda e: e.start_ns
    )
    # Both edges cut through a kernel: the 10th and the 40th.
    ws = kernels[10].start_ns + kernels[10].dur_ns // 2
    we = kernels[40].start_ns + kernels[40].dur_ns // 2
    lanes = ",".join(map(str, gpu))
    body = _area(client, trace_id, start_ns=ws, end_ns=we, lanes=lanes, limit=5000)
    want = _raw_sums(None, ws, we)
    assert _sums(body) == want and len(want) > 5
    assert sum(c["total_ns"] for c in body["categories"]) == sum(t for _, t, _ in want.values())
    totals = [n["total_ns"] for n in body["names"]]
    assert totals == sorted(totals, reverse=True)
    assert all(n["avg_ns"] == n["wall_ns"] // n["count"] for n in body["names"])
    for lane, stream in gpu.items():
        one = _area(client, trace_id, start_ns=ws, end_ns=we, lanes=str(lane), limit=5000)
        assert _sums(one) == _raw_sums(stream, ws, we)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"start_ns": 10, "end_ns": 10}, "empty range"),
        ({"start_ns": 10, "end_ns": 5}, "empty range"),
        ({"start_ns": 0, "end_ns": 2**63}, "less than or equal"),
        ({"start_ns": -(2**63), "end_ns": 5}, "greater than or equal"),
        ({"start_ns": 0, "end_ns": 10, "lanes": "0,999"}, "999"),
        ({"start_ns": 0, "end_ns": 10, "lanes": "a,b"}, "comma-separated"),
        ({"start_ns": 0, "end_ns": 10, "limit": 0}, "greater than or equal"),
        ({"start_ns": 0, "end_ns": 10, "limit": 5001}, "less than or equal"),
        ({"end_ns": 10}, "start_ns"),
    ],
)
def test_area_refuses_bad_ranges_lanes_and_limits(
    client: TestClient, ingest: Ingest, params: dict[str, Any], message: str
) -> None:
    trace_id = ingest(_hand_made(), "area.json")
    response = client.get(f"/api/v1/traces/{trace_id}/timeline/area", params=params)
    assert response.status_code == 422 and message in response.text, response.text


def test_area_of_an_unknown_trace(client: TestClient) -> None:
    response = client.get("/api/v1/traces/nope/timeline/area", params={"start_ns": 0, "end_ns": 1})
    assert response.status_code == 404


def test_the_widest_range_int64_allows(client: TestClient, ingest: Ingest) -> None:
    trace_id = ingest(_hand_made(), "area.json")
    edge = 2**63 - 1
    body = _area(client, trace_id, start_ns=-edge, end_ns=edge)
    assert _sums(body) == {
        "k0": (1, 15_000, 15_000), "k1": (2, 20_000, 20_000), "k2": (1, 20_000, 20_000),
        "k3": (1, 1_000, 1_000), "op": (1, 60_000, 60_000),
    }  # fmt: skip
