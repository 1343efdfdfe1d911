"""Flow arrows of an event (`/events/{id}/flows`) against the profiler's own flows.

Kineto writes its own CPU launch -> GPU work links: `ac2g` flow events, an `s` on the
runtime call and an `f` on the GPU event, sharing an id. Those are read here from the raw
JSON (`flow_pairs`, `raw_chrome`), not through perfdash. Collective flows are checked on a
real 2-rank DDP trace against the ranks' own files; the correlation rule on a hand-made
trace whose answer is known.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from backend.core.config import Settings
from backend.services.loading.pipeline import ingest_trace
from tests.conftest import CORPUS
from tests.factories import Ingest, stored_events, upload, upload_trace
from tests.timeline.conftest import H200
from tests.timeline.flow_pairs import Point, chrome_flows, chrome_points, nsys_pairs
from tests.timeline.raw_chrome import GPU_WORK, raw_events, read_doc

DATA = Path(__file__).resolve().parents[1] / "data"
DDP = DATA / "ddp"
GEMM_LOOP = CORPUS / "h200" / "torch2.11_gemm_loop.json"
TORCH = [
    pytest.param(H200, id="h200_train_step"),
    pytest.param(
        GEMM_LOOP, id="corpus_gemm_loop",
        marks=pytest.mark.skipif(not GEMM_LOOP.exists(), reason="corpus absent"),
    ),
]  # fmt: skip


def _flows(client: TestClient, trace_id: str, event_id: int, **params: Any) -> dict[str, Any]:
    response = client.get(f"/api/v1/traces/{trace_id}/events/{event_id}/flows", params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _launches_of(doc: dict[str, Any]) -> dict[Point, Point]:
    """Kineto's own links: the GPU event's place -> its runtime call's place."""
    gpu = chrome_points(doc, GPU_WORK)
    return {end: start for start, end in chrome_flows(doc).pairs() if gpu[end]}


@pytest.mark.parametrize("path", TORCH)
def test_launch_flows_are_kinetos_own_flows(
    client: TestClient, engine: Engine, ingest: Ingest, path: Path
) -> None:
    doc = read_doc(path)
    launches = _launches_of(doc)
    calls = {
        (e.pid, e.tid, e.start_ns): e
        for e in raw_events(doc)
        if e.cat in ("cuda_runtime", "cuda_driver")
    }
    kernels = [
        e for e in raw_events(doc) if e.cat == "kernel" and (e.pid, e.tid, e.start_ns) in launches
    ]
    assert len(kernels) >= 10
    trace_id = ingest(path)
    stored = {e["id"]: e for e in stored_events(engine, trace_id)}
    by_start = {(e["kind"], e["start_ns"], e["name"]): e["id"] for e in stored.values()}
    for kernel in kernels[:: max(1, len(kernels) // 12)]:
        kernel_id = by_start[("kernel", kernel.start_ns, kernel.name)]
        (flow,) = _flows(client, trace_id, kernel_id)["items"]
        pid, tid, start = launches[(kernel.pid, kernel.tid, kernel.start_ns)]
        call = stored[flow["from_id"]]
        assert flow["kind"] == "launch" and flow["to_id"] == kernel_id
        assert (flow["from_ns"], flow["to_ns"]) == (start, kernel.start_ns)
        assert (call["kind"], call["pid"], call["tid"], call["start_ns"]) == (
            "runtime",
            pid,
            tid,
            start,
        )
        assert call["name"] == calls[(pid, tid, start)].name
        # The same arrow seen from the call: Kineto's flows of that id, to GPU work.
        back = _flows(client, trace_id, flow["from_id"])["items"]
        want = sorted(end[2] for end, begin in launches.items() if begin == (pid, tid, start))
        assert sorted(f["to_ns"] for f in back) == want
        assert kernel_id in {f["to_id"] for f in back}
        assert all(f["from_id"] == flow["from_id"] for f in back)


def test_a_step_flows_to_the_gpu_work_its_thread_launched(
    client: TestClient, engine: Engine, ingest: Ingest
) -> None:
    """A ProfilerStep range gets the launches of the calls on its thread inside it, which
    are Kineto's flows that start on that thread in the step; `limit` cuts them."""
    doc = read_doc(H200)
    steps = [e for e in raw_events(doc) if e.cat == "user_annotation" and "ProfilerStep" in e.name]
    launches = _launches_of(doc)
    trace_id = ingest(H200)
    stored = stored_events(engine, trace_id)
    for step in steps:
        (event,) = [
            e
            for e in stored
            if (e["name"], e["start_ns"]) == (step.name, step.start_ns)
            and e["kind"] != "gpu_annotation"
        ]
        want = sorted(
            (begin[2], end[2])
            for end, begin in launches.items()
            if begin[:2] == (step.pid, step.tid) and step.start_ns <= begin[2] <= step.end_ns
        )
        body = _flows(client, trace_id, event["id"], limit=5000)
        assert body["truncated"] is False and len(want) > 3
        assert sorted((f["from_ns"], f["to_ns"]) for f in body["items"]) == want
        cut = _flows(client, trace_id, event["id"], limit=3)
        assert cut["truncated"] is True and cut["items"] == body["items"][:3]


def test_collective_flows_pair_the_nth_kernel_of_each_rank(
    client: TestClient, engine: Engine, settings: Settings
) -> None:
    names = [f"ddp_rank{rank}.pt.trace.json.gz" for rank in (0, 1)]
    trace_id = upload(client, [(name, (DDP / name).read_bytes()) for name in names])["id"]
    assert ingest_trace(engine=engine, settings=settings, trace_id=trace_id) == "ready"
    raw = {}
    for rank, name in enumerate(names):
        kernels = [e for e in raw_events(read_doc(DDP / name)) if e.cat == "kernel"]
        raw[rank] = sorted((e.start_ns, e.index, e.name) for e in kernels if "nccl" in e.name)
    assert len(raw[0]) == len(raw[1]) >= 8
    stored = {e["id"]: e for e in stored_events(engine, trace_id)}
    lanes = {
        lane["lane"]: lane
        for lane in client.get(f"/api/v1/traces/{trace_id}/timeline").json()["lanes"]
    }
    for rank in (0, 1):
        for n, (start, _, name) in enumerate(raw[rank]):
            (event,) = [e for e in stored.values() if e["start_ns"] == start and e["name"] == name]
            items = _flows(client, trace_id, event["id"])["items"]
            (peer,) = [f for f in items if f["kind"] == "collective"]
            assert [f["kind"] for f in items] == ["launch", "collective"]
            other = stored[peer["to_id"]]
            assert other["name"] == name and other["rank"] == 1 - rank
            assert peer["to_ns"] == raw[1 - rank][n][0]
            assert (peer["from_id"], peer["from_ns"]) == (event["id"], start)
            assert lanes[peer["to_lane"]]["rank"] == 1 - rank
            assert (
                lanes[peer["from_lane"]]["rank"] == rank
                and "NCCL" in lanes[peer["from_lane"]]["label"]
            )
    compute = next(e for e in stored.values() if e["kind"] == "kernel" and "nccl" not in e["name"])
    assert [f["kind"] for f in _flows(client, trace_id, compute["id"])["items"]] == ["launch"]


@pytest.mark.parametrize("name", ["train_step", "nccl_2gpu"])
def test_nsys_launch_flows_are_its_own_correlation_links(
    client: TestClient, engine: Engine, ingest: Ingest, name: str
) -> None:
    """Nsight Systems, read with its own SQL (`flow_pairs.nsys_pairs`): `train_step`
    replays a CUDA graph (one launch, three kernels); `nccl_2gpu` has two processes whose
    correlation ids overlap, so the process decides the launch."""
    path = DATA / "nsys" / f"{name}.sqlite"
    pairs = sorted(nsys_pairs(path).elements())
    trace_id = ingest(path)
    stored = {e["id"]: e for e in stored_events(engine, trace_id)}
    gpu = {
        (e["device"], e["stream"], e["start_ns"]): e["id"]
        for e in stored.values()
        if e["kind"] in ("kernel", "memcpy", "memset")
    }
    fan_out: dict[Point, list[int]] = {}
    ends = Counter(start for start, _ in pairs)
    graphs = [pair for pair in pairs if ends[pair[0]] > 1]  # every graph launch, and a sample
    assert len(graphs) == (9 if name == "train_step" else 0)
    for (pid, tid, t0), (device, stream, t1) in graphs + pairs[:: max(1, len(pairs) // 40)]:
        (flow,) = _flows(client, trace_id, gpu[(device, stream, t1)])["items"]
        call = stored[flow["from_id"]]
        assert (call["kind"], call["pid"], call["tid"], flow["from_ns"]) == (
            "runtime",
            pid,
            tid,
            t0,
        )
        fan_out[(pid, tid, t0)] = [flow["from_id"]]
    for start, (call_id,) in fan_out.items():
        want = sorted(end[2] for begin, end in pairs if begin == start)
        assert sorted(f["to_ns"] for f in _flows(client, trace_id, call_id)["items"]) == want


def _reused_correlation() -> bytes:
    """Correlation 2 used by two calls (at 20 and 40 µs); kernels at 25 and 45 µs carry it.
    Each kernel belongs to the latest call at or before it."""

    def call(ts: float) -> dict[str, Any]:
        return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                "tid": 1, "ts": ts, "dur": 1.0, "args": {"correlation": 2}}  # fmt: skip

    def kernel(name: str, ts: float) -> dict[str, Any]:
        return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts,
                "dur": 2.0, "args": {"stream": 7, "device": 0, "correlation": 2}}  # fmt: skip

    op = {"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": 39.0, "dur": 5.0}
    events = [call(20.0), call(40.0), kernel("a", 25.0), kernel("b", 45.0), op]
    return json.dumps({"traceEvents": events}).encode()


def test_a_reused_correlation_links_each_kernel_to_the_latest_call(
    client: TestClient, engine: Engine, ingest: Ingest
) -> None:
    trace_id = ingest(_reused_correlation(), "reused.json")
    ids = {(e["kind"], e["start_ns"]): e["id"] for e in stored_events(engine, trace_id)}
    first, second = ids[("runtime", 20_000)], ids[("runtime", 40_000)]
    a, b = ids[("kernel", 25_000)], ids[("kernel", 45_000)]
    for call, kernel in ((first, a), (second, b)):
        (flow,) = _flows(client, trace_id, kernel)["items"]
        assert (flow["from_id"], flow["to_id"]) == (call, kernel)
        (flow,) = _flows(client, trace_id, call)["items"]
        assert (flow["from_id"], flow["to_id"]) == (call, kernel)
    op_flows = _flows(client, trace_id, ids[("cpu_op", 39_000)])["items"]
    assert [(f["from_id"], f["to_id"]) for f in op_flows] == [(second, b)]


def test_flow_errors(client: TestClient, ingest: Ingest) -> None:
    trace_id = ingest(H200)
    base = f"/api/v1/traces/{trace_id}/events"
    missing = client.get(f"{base}/999999999/flows")
    assert missing.status_code == 404 and "999999999" in missing.json()["detail"]
    assert client.get("/api/v1/traces/nope/events/1/flows").status_code == 404
    for limit in (0, 5001):
        response = client.get(f"{base}/1/flows", params={"limit": limit})
        assert response.status_code == 422 and "limit" in response.text
    assert client.get(f"{base}/1/flows", params={"limit": 5000}).status_code == 200
    queued = upload_trace(client, _reused_correlation(), "queued.json")
    response = client.get(f"/api/v1/traces/{queued}/events/1/flows")
    assert response.status_code == 422 and "not ready" in response.json()["detail"]
