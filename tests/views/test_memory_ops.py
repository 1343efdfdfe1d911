"""`/memory/ops` and `/memory/peak` against the raw files (`memory_reference`, no perfdash code).

Real traces (two H200 training traces, the 8-GPU synthetic sample, the corpus's two-thread
HTA trace) are ingested once on SQLite: the analysis reads only the dataset. A small
hand-made trace pins each rule (innermost op, own thread, half-open ranges, pairing by
address, address reuse, a free of memory allocated before the trace, Python stacks, host
memory, other GPUs) on both SQL engines, and the bad inputs get their 4xx.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, get_args

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from backend.core.config import Settings
from backend.models.memory_ops import MemoryOpsSort
from backend.services.analysis.memory_ops import OPS_SORTS
from backend.services.loading import ingest_trace
from tests.conftest import CORPUS, DATA, REPO, app_with_traces
from tests.factories import Ingest, upload
from tests.views.memory_reference import OUTSIDE, expected

SAMPLE = REPO / "backend" / "sample_data"
TRACES = {
    "train_step": (DATA / "torch" / "h200_train_step.pt.trace.json.gz", 0),
    "gpt_small": (DATA / "torch" / "h200_gpt_small.pt.trace.json.gz", 0),
    "ops_stack": (DATA / "torch" / "h200_ops_stack.pt.trace.json.gz", 0),
    "synthetic": (SAMPLE / "synthetic_train_8gpu_rank0.pt.trace.json.gz", 0),
    "hta_two_threads": (CORPUS / "kineto" / "hta__df_index_resolver_rank1_of_2.json.gz", 1),
}  # fmt: skip
API = "/api/v1/traces"


@dataclass
class World:
    client: TestClient
    traces: dict[str, str]

    def get(self, url: str, status: int = 200, **params: Any) -> Any:
        response = self.client.get(url, params=params)
        assert response.status_code == status, response.text
        return response.json()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    folder = tmp_path_factory.mktemp("memory_ops")
    paths = {name: path for name, (path, _) in TRACES.items()}
    with app_with_traces(folder, paths) as (client, _, traces):
        yield World(client, traces)


def _trace(world: World, name: str) -> str:
    if name not in world.traces:
        pytest.skip(f"{TRACES[name][0]} is absent (set PERFDASH_TEST_CORPUS)")
    return world.traces[name]


@pytest.mark.parametrize("name", list(TRACES))
def test_ops_equal_the_raw_file(world: World, name: str) -> None:
    trace_id = _trace(world, name)
    path, device = TRACES[name]
    want = expected(path, device)
    body = world.get(f"{API}/{trace_id}/memory/ops", device=device, limit=1000)
    assert body["device"] == device and body["group"] == "op"
    got = {
        r["name"]: [r["allocs"], r["alloc_bytes"], r["frees"], r["free_bytes"], r["held_bytes"],
                    r["peak_bytes"]]
        for r in body["items"]
    }  # fmt: skip
    assert got == dict(want.ops)
    assert body["count"] == len(want.ops)
    assert body["events"] == want.events
    assert body["outside_op_events"] == want.outside
    assert body["unmatched_frees"] == len(want.unmatched)
    assert body["unmatched_free_bytes"] == sum(want.unmatched)
    assert body["allocs"] == sum(v[0] for v in want.ops.values())
    for r in body["items"]:
        assert r["self_net_bytes"] == r["alloc_bytes"] - r["free_bytes"]
        assert r["stack"] == []
    assert [r["alloc_bytes"] for r in body["items"]] == sorted(
        (r["alloc_bytes"] for r in body["items"]), reverse=True
    )


@pytest.mark.parametrize("name", list(TRACES))
def test_peak_equals_the_raw_file(world: World, name: str) -> None:
    trace_id = _trace(world, name)
    path, device = TRACES[name]
    want = expected(path, device)
    body = world.get(f"{API}/{trace_id}/memory/peak", device=device, limit=1000)
    assert body["peak_allocated_bytes"] == want.peak_allocated
    got = {r["name"]: [r["allocations"], r["bytes"]] for r in body["items"]}
    assert got == dict(want.peak)
    assert body["live_bytes"] == sum(v[1] for v in want.peak.values())
    assert body["live_allocations"] == sum(v[0] for v in want.peak.values())
    assert body["live_bytes"] + body["before_trace_bytes"] == body["peak_allocated_bytes"]
    sizes = [r["bytes"] for r in body["items"]]
    assert sizes == sorted(sizes, reverse=True)
    for r in body["items"]:
        assert r["share_pct"] == pytest.approx(100 * r["bytes"] / want.peak_allocated, abs=1e-3)
    # The same instant as the Memory tab's peak, which the file's own timestamps place.
    memory = world.get(f"{API}/{trace_id}/memory")
    series = next(d for d in memory["devices"] if d["device"] == device)
    assert body["peak_t_ns"] == series["peak_allocated_t_ns"]
    assert body["peak_allocated_bytes"] == series["peak_allocated"]
    ops = world.get(f"{API}/{trace_id}/memory/ops", device=device, limit=1000)
    assert sum(r["peak_bytes"] for r in ops["items"]) == body["live_bytes"]


def test_host_memory_is_device_minus_one(world: World) -> None:
    trace_id = _trace(world, "train_step")
    want = expected(TRACES["train_step"][0], -1)
    assert want.events > 0
    body = world.get(f"{API}/{trace_id}/memory/ops", device=-1, limit=1000)
    assert {r["name"]: [r["allocs"], r["alloc_bytes"]] for r in body["items"]} == {
        k: v[:2] for k, v in want.ops.items()
    }
    assert body["devices"] == [{"rank": None, "device": 0}, {"rank": None, "device": -1}]


def test_pages_cover_the_whole_table(world: World) -> None:
    trace_id = _trace(world, "gpt_small")
    url = f"{API}/{trace_id}/memory/ops"
    whole = world.get(url, limit=1000, sort="held_bytes")["items"]
    pages = [
        world.get(url, limit=7, offset=o, sort="held_bytes")["items"]
        for o in range(0, len(whole), 7)
    ]
    assert [r for p in pages for r in p] == whole
    assert [r["held_bytes"] for r in whole] == sorted(
        (r["held_bytes"] for r in whole), reverse=True
    )
    names = [r["name"] for r in world.get(url, limit=1000, sort="name")["items"]]
    assert names == sorted(names)


@pytest.mark.parametrize(
    ("query", "status", "text"),
    [
        ({"device": -2}, 422, "greater than or equal to -1"),
        ({"limit": 0}, 422, "greater than or equal to 1"),
        ({"limit": 1001}, 422, "less than or equal to 1000"),
        ({"offset": -1}, 422, "greater than or equal to 0"),
        ({"sort": "bytes"}, 422, "alloc_bytes"),
        ({"group": "module"}, 422, "'op' or 'stack'"),
        ({"device": "cuda:0"}, 422, "valid integer"),
        ({"device": 3}, 404, "devices with memory events: 0, -1 (-1 is host memory)"),
        ({"rank": 2}, 404, "of rank 2"),
    ],
)
def test_bad_queries(world: World, query: dict[str, Any], status: int, text: str) -> None:
    trace_id = _trace(world, "train_step")
    for route in ("ops", "peak"):
        if route == "peak" and set(query) & {"sort", "offset"}:
            continue
        body = world.get(f"{API}/{trace_id}/memory/{route}", status=status, **query)
        assert text in json.dumps(body["detail"]), body


def test_unknown_trace_is_404(world: World) -> None:
    for route in ("ops", "peak"):
        body = world.get(f"{API}/no-such-trace/memory/{route}", status=404)
        assert "no-such-trace" in body["detail"]


# A hand-made trace, times in µs: thread 1 runs ProfilerStep#1 [0, 100) holding
# aten::outer [10, 50) holding aten::empty [12, 14); aten::add [50, 60) starts as outer ends.
# Thread 2 runs aten::mm [30, 40); thread 3 runs no op. Python frames on thread 1:
# train.py [5, 95) holding model.py [9, 50).
def _x(cat: str, name: str, ts: float, dur: float, tid: int = 1) -> dict[str, Any]:
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur,
            "args": {}}  # fmt: skip


def _mem(ts: float, nbytes: int, addr: int, total: int, tid: int = 1, device: int = 0,
         device_type: int = 1) -> dict[str, Any]:  # fmt: skip
    return {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": tid,
            "ts": ts, "s": "t", "args": {"Device Type": device_type, "Device Id": device,
            "Bytes": nbytes, "Addr": addr, "Total Allocated": total,
            "Total Reserved": 1 << 20}}  # fmt: skip


HAND_MADE = [
    _x("user_annotation", "ProfilerStep#1", 0, 100),
    _x("cpu_op", "aten::outer", 10, 40),
    _x("cpu_op", "aten::empty", 12, 2),
    _x("cpu_op", "aten::add", 50, 10),
    _x("cpu_op", "aten::mm", 30, 10, tid=2),
    _x("python_function", "train.py(10): step", 5, 90),
    _x("python_function", "model.py(3): forward", 9, 41),
    _mem(13, 100, 0xA, 164),  # aten::empty, the innermost op
    _mem(13, 8, 0xF, 8, device=-1, device_type=0),  # host memory
    _mem(20, 200, 0xB, 364),  # aten::outer
    _mem(20, 500, 0xC, 500, device=1),  # another GPU
    _mem(35, 1000, 0xD, 1364, tid=2),  # aten::mm on thread 2, not outer on thread 1
    _mem(35, 50, 0xE, 1414, tid=3),  # no op on thread 3: outside; the peak
    _mem(50, -100, 0xA, 1314),  # at outer's end and add's start: aten::add
    _mem(55, 300, 0xB, 1414),  # 0xB again: its first block's free was not recorded
    _mem(70, -64, 0x99, 1350),  # allocated before the trace; in ProfilerStep#1 only
    _mem(80, -1000, 0xD, 350, tid=2),  # after aten::mm, in no range: outside
]


def _hand_made() -> bytes:
    return json.dumps({"traceEvents": HAND_MADE, "schemaVersion": 1}).encode()


def test_rules_on_a_hand_made_trace(client: TestClient, ingest: Ingest) -> None:
    trace_id = ingest(_hand_made(), "hand_made.pt.trace.json")
    body = client.get(f"{API}/{trace_id}/memory/ops", params={"limit": 1000}).json()
    rows = {r["name"]: r for r in body["items"]}
    cols = ("allocs", "alloc_bytes", "frees", "free_bytes", "self_net_bytes", "held_bytes",
            "peak_bytes")  # fmt: skip
    assert {n: tuple(r[c] for c in cols) for n, r in rows.items()} == {
        "aten::empty": (1, 100, 0, 0, 100, 0, 100),
        "aten::outer": (1, 200, 0, 0, 200, 0, 200),
        "aten::mm": (1, 1000, 0, 0, 1000, 0, 1000),
        "aten::add": (1, 300, 1, 100, 200, 300, 0),
        "ProfilerStep#1": (0, 0, 1, 64, -64, 0, 0),  # a range, not an op: kind "range"
        OUTSIDE: (1, 50, 1, 1000, -950, 50, 50),
    }
    kinds = {n: r["kind"] for n, r in rows.items()}
    assert kinds == {"ProfilerStep#1": "range", OUTSIDE: "none"} | {
        n: "op" for n in ("aten::empty", "aten::outer", "aten::mm", "aten::add")
    }
    assert (body["events"], body["allocs"], body["frees"]) == (8, 5, 3)
    assert (body["unmatched_frees"], body["unmatched_free_bytes"]) == (1, 64)
    assert body["outside_op_events"] == 2
    assert body["has_stacks"] is True
    assert body["devices"] == [
        {"rank": None, "device": 0},
        {"rank": None, "device": 1},
        {"rank": None, "device": -1},
    ]
    assert expected(_hand_made(), 0).ops == {
        n: [r["allocs"], r["alloc_bytes"], r["frees"], r["free_bytes"], r["held_bytes"],
            r["peak_bytes"]]
        for n, r in rows.items()
    }  # fmt: skip
    peak = client.get(f"{API}/{trace_id}/memory/peak").json()
    assert peak["peak_t_ns"] == 35_000 and peak["peak_allocated_bytes"] == 1414
    assert (peak["live_bytes"], peak["before_trace_bytes"], peak["live_allocations"]) == (
        1350,
        64,
        4,
    )
    assert [(r["name"], r["bytes"]) for r in peak["items"]] == [
        ("aten::mm", 1000), ("aten::outer", 200), ("aten::empty", 100), (OUTSIDE, 50)
    ]  # fmt: skip
    other = client.get(f"{API}/{trace_id}/memory/ops", params={"device": 1}).json()
    assert [(r["name"], r["alloc_bytes"]) for r in other["items"]] == [("aten::outer", 500)]
    host = client.get(f"{API}/{trace_id}/memory/ops", params={"device": -1}).json()
    assert [(r["name"], r["alloc_bytes"]) for r in host["items"]] == [("aten::empty", 8)]


def test_stacks_on_a_hand_made_trace(client: TestClient, ingest: Ingest) -> None:
    trace_id = ingest(_hand_made(), "hand_made.pt.trace.json")
    params = {"group": "stack", "limit": 1000}
    body = client.get(f"{API}/{trace_id}/memory/ops", params=params).json()
    stacks = {r["name"]: r["stack"] for r in body["items"]}
    frames = ["train.py(10): step", "model.py(3): forward"]
    # model.py ends at 50 as aten::add starts: not open at add's start.
    assert stacks == {
        "aten::empty": frames,
        "aten::outer": frames,
        "aten::add": frames[:1],
        "aten::mm": [],
        "ProfilerStep#1": [],
        OUTSIDE: [],
    }
    peak = client.get(f"{API}/{trace_id}/memory/peak", params=params).json()
    assert {r["name"]: r["stack"] for r in peak["items"]}["aten::empty"] == frames


def test_a_trace_without_memory_events(client: TestClient, ingest: Ingest) -> None:
    events = [e for e in HAND_MADE if e["name"] != "[memory]"]
    trace_id = ingest(json.dumps({"traceEvents": events}).encode(), "no_memory.json")
    for route in ("ops", "peak"):
        body = client.get(f"{API}/{trace_id}/memory/{route}").json()
        assert body["items"] == [] and body["devices"] == [] and body["device"] is None
        assert "profile_memory=True" in body["note"]
    body = client.get(f"{API}/{trace_id}/memory/ops", params={"device": 0})
    assert body.status_code == 200  # nothing to choose from: the same empty answer


def test_stacks_equal_the_raw_file(world: World) -> None:
    """`with_stack`: rows per (op, Python frames open at the op's start on its thread)."""
    trace_id = _trace(world, "ops_stack")
    path, device = TRACES["ops_stack"]
    want = expected(path, device, stacks=True)
    params = {"device": device, "group": "stack", "limit": 1000}
    body = world.get(f"{API}/{trace_id}/memory/ops", **params)
    assert body["has_stacks"] is True and body["group"] == "stack"
    got = {
        (r["name"], tuple(r["stack"])): [r["allocs"], r["alloc_bytes"], r["frees"],
                                         r["free_bytes"], r["held_bytes"], r["peak_bytes"]]
        for r in body["items"]
    }  # fmt: skip
    assert got == dict(want.ops)
    assert any(len(stack) > 3 for _, stack in got)  # real stacks, several frames deep
    peak = world.get(f"{API}/{trace_id}/memory/peak", **params)
    assert {(r["name"], tuple(r["stack"])): [r["allocations"], r["bytes"]]
            for r in peak["items"]} == dict(want.peak)  # fmt: skip


def _torch_self_memory(field_name: str) -> dict[str, int]:
    """torch's `key_averages()` self memory per name (its CPU and CUDA entries summed)."""
    doc = json.loads((DATA / "torch" / "h200_ops_stack.memory.json").read_text())
    out: dict[str, int] = {}
    for e in doc["entries"]:
        out[e["name"]] = out.get(e["name"], 0) + e[field_name]
    return {k: v for k, v in out.items() if v}


@pytest.mark.parametrize(
    ("device", "field_name"), [(0, "self_device_memory_usage"), (-1, "self_cpu_memory_usage")]
)
def test_self_memory_equals_torch_key_averages(world: World, device: int, field_name: str) -> None:
    """Net bytes of each op's own events against torch's self memory per op name.

    torch folds `ProfilerStep#N` into `ProfilerStep*`. It counts a range's memory from every
    thread's events in its time (only its children are same-thread), so the step, which holds
    the backward pass run by the autograd thread, differs from the per-thread answer by the net
    bytes of the other threads' events inside the steps (computed here from the raw file)."""
    trace_id = _trace(world, "ops_stack")
    body = world.get(f"{API}/{trace_id}/memory/ops", device=device, limit=1000)
    ours: dict[str, int] = {}
    for r in body["items"]:
        name = "ProfilerStep*" if r["name"].startswith("ProfilerStep#") else r["name"]
        ours[name] = ours.get(name, 0) + r["self_net_bytes"]
    ours = {k: v for k, v in ours.items() if v}
    torch_self = _torch_self_memory(field_name)
    assert OUTSIDE not in ours  # every event of this trace is inside an op or a range
    same = {k for k in ours.keys() | torch_self.keys() if ours.get(k) == torch_self.get(k)}
    differ = (ours.keys() | torch_self.keys()) - same
    events = json.loads(gzip.decompress(TRACES["ops_stack"][0].read_bytes()))["traceEvents"]
    other_thread = 0
    steps = [e for e in events if e.get("cat") == "user_annotation"
             and e["name"].startswith("ProfilerStep#")]  # fmt: skip
    assert len(steps) == 2
    for step in steps:
        lo, hi = step["ts"], step["ts"] + step["dur"]
        other_thread += sum(
            m["args"]["Bytes"] for m in events
            if m.get("name") == "[memory]" and m["tid"] != step["tid"]
            and lo <= m["ts"] <= hi and (m["args"]["Device Type"] == 0) == (device == -1)
        )  # fmt: skip
    if other_thread:
        assert differ == {"ProfilerStep*"}
        assert torch_self.get("ProfilerStep*", 0) - ours.get("ProfilerStep*", 0) == other_thread
    else:
        assert differ == set()
    assert len(same) >= (15 if device == 0 else 2)


def _rank_doc(rank: int, nbytes: int) -> tuple[str, bytes]:
    events = [_x("cpu_op", f"aten::op_rank{rank}", 10, 10), _mem(12, nbytes, 0xA, nbytes)]
    doc = {"traceEvents": events, "distributedInfo": {"rank": rank, "world_size": 2}}
    return f"rank{rank}.pt.trace.json", json.dumps(doc).encode()


def test_ranks_are_kept_apart(client: TestClient, engine: Engine, settings: Settings) -> None:
    """Two ranks' files in one trace: each (rank, device) is its own allocator."""
    trace_id = str(upload(client, [_rank_doc(0, 100), _rank_doc(1, 300)])["id"])
    assert ingest_trace(engine=engine, settings=settings, trace_id=trace_id) == "ready"
    url = f"{API}/{trace_id}/memory/ops"
    first = client.get(url).json()
    assert first["devices"] == [{"rank": 0, "device": 0}, {"rank": 1, "device": 0}]
    assert first["rank"] == 0
    assert [(r["name"], r["alloc_bytes"]) for r in first["items"]] == [("aten::op_rank0", 100)]
    second = client.get(url, params={"rank": 1}).json()
    assert [(r["name"], r["alloc_bytes"]) for r in second["items"]] == [("aten::op_rank1", 300)]
    peak = client.get(f"{API}/{trace_id}/memory/peak", params={"rank": 1}).json()
    assert (peak["rank"], peak["peak_allocated_bytes"], peak["live_bytes"]) == (1, 300, 300)
    missing = client.get(url, params={"rank": 5})
    assert missing.status_code == 404 and "0 (rank 0), 0 (rank 1)" in missing.json()["detail"]


def test_every_sort_the_route_accepts_is_implemented() -> None:
    assert set(get_args(MemoryOpsSort)) == set(OPS_SORTS)
