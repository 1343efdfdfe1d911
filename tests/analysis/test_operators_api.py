"""`/operators` and `/operators/stacks` on SQLite and PostgreSQL: limits, errors, and numbers
checked against the raw trace files, read here with `json` and `decimal` only.

The raw checks lean on what the trace itself records and perfdash does not use: each GPU
event's `External id` names the op that launched it (perfdash pairs them by correlation and
time instead), and an op's `dur` is its CPU total.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter, defaultdict
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.factories import Ingest
from tests.views.kineto_builder import document

REPO = Path(__file__).resolve().parents[2]
H200 = REPO / "tests" / "data" / "torch" / "h200_train_step.pt.trace.json.gz"
H200_SMALL = REPO / "tests" / "data" / "torch" / "h200_gpt_small.pt.trace.json.gz"
SYNTHETIC = REPO / "backend" / "sample_data" / "synthetic_train_8gpu_rank0.pt.trace.json.gz"
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
SQLITE_ONLY = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


def _raw(path: Path) -> list[dict[str, Any]]:
    doc = json.loads(gzip.decompress(path.read_bytes()), parse_float=Decimal)
    events: list[dict[str, Any]] = doc["traceEvents"]
    return events


def _ns(us: Decimal) -> int:
    return int(us * 1000)


def _operators(client: TestClient, tid: str, **params: Any) -> dict[str, Any]:
    response = client.get(f"/api/v1/traces/{tid}/operators", params={"limit": 5000, **params})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_bad_parameters_are_refused(client: TestClient, ingest: Ingest) -> None:
    tid = ingest(H200)
    url = f"/api/v1/traces/{tid}/operators"
    for params in (
        {"limit": 0},
        {"limit": 5001},
        {"limit": "x"},
        {"sort": "bogus"},
        {"order": "up"},
        {"group": "stack"},
        {"q": "x" * 501},
    ):
        response = client.get(url, params=params)
        assert response.status_code == 422, params
        assert response.json()["detail"], params
    assert client.get(f"/api/v1/traces/{tid}/operators/stacks?max_nodes=0").status_code == 422
    for path in ("operators", "operators/stacks"):
        missing = client.get(f"/api/v1/traces/no-such-trace/{path}")
        assert missing.status_code == 404
        assert "no-such-trace" in missing.json()["detail"]


@pytest.mark.parametrize("trace", [H200, SYNTHETIC], ids=["h200", "synthetic_8gpu"])
def test_device_self_is_the_gpu_work_each_op_launched(
    client: TestClient, ingest: Ingest, trace: Path
) -> None:
    """Summed over every op, device self time is all GPU work linked to an op by the
    trace's own `External id`; per op name, likewise, and so are the kernels listed."""
    events = _raw(trace)
    op_of = {e["args"]["External id"]: e["name"] for e in events
             if e.get("cat") == "cpu_op" and "External id" in e.get("args", {})}  # fmt: skip
    per_op: dict[str, int] = defaultdict(int)
    kernels: dict[str, Counter[str]] = defaultdict(Counter)
    for e in events:
        ext = e.get("args", {}).get("External id")
        if e.get("cat") in GPU_CATS and ext in op_of:
            per_op[op_of[ext]] += _ns(e["dur"])
            kernels[op_of[ext]][e["name"]] += 1
    body = _operators(client, ingest(trace))
    ops = {i["name"]: i for i in body["items"] if i["kind"] == "cpu_op"}
    assert per_op, "the trace links no GPU work to an op"
    assert sum(i["device_self_ns"] for i in ops.values()) == sum(per_op.values())
    for name, ns in per_op.items():
        if name == "aten::sum":  # torch folds aten::sum into its same-named parent (checked below)
            continue
        assert ops[name]["device_self_ns"] == ns, name
        listed = {k["name"]: k["count"] for k in ops[name]["kernels"]}
        if len(kernels[name]) <= 10:
            assert listed == dict(kernels[name]), name


def test_cpu_totals_counts_and_shapes_from_the_raw_file(client: TestClient, ingest: Ingest) -> None:
    """cpu_total per op is the sum of its events' `dur`; group=shape splits the same calls
    by their `Input Dims`. Ops that never call an op of their own name only (torch merges
    those: `aten::sum`)."""
    events = [e for e in _raw(H200) if e.get("cat") == "cpu_op"]
    tid = ingest(H200)
    ops = {i["name"]: i for i in _operators(client, tid)["items"]}
    shaped = _operators(client, tid, group="shape")
    assert shaped["group"] == "shape"
    for name in ("aten::mm", "aten::add", "aten::copy_", "aten::gelu", "aten::_softmax"):
        mine = [e for e in events if e["name"] == name]
        assert ops[name]["count"] == len(mine)
        assert ops[name]["cpu_total_ns"] == sum(_ns(e["dur"]) for e in mine)
        assert ops[name]["cpu_self_ns"] <= ops[name]["cpu_total_ns"]
        by_shape = Counter(json.dumps(e["args"]["Input Dims"]) for e in mine)
        rows = [i for i in shaped["items"] if i["name"] == name]
        got = {json.dumps(json.loads(i["input_shapes"])): i["count"] for i in rows}
        assert got == dict(by_shape), name
    outer_sums = [
        e for e in events if e["name"] == "aten::sum" and len(e["args"]["Input Dims"]) == 2
    ]
    assert ops["aten::sum"]["count"] == len(outer_sums)


def test_sort_order_search_and_limit(client: TestClient, ingest: Ingest) -> None:
    tid = ingest(H200_SMALL)
    full = _operators(client, tid)
    assert full["count"] == len(full["items"]) > 20
    for field in ("count", "cpu_total_ns", "cpu_self_ns", "device_total_ns", "device_self_ns"):
        down = [i[field] for i in _operators(client, tid, sort=field)["items"]]
        assert down == sorted(down, reverse=True), field
        up = [i[field] for i in _operators(client, tid, sort=field, order="asc")["items"]]
        assert up == sorted(up), field
    names = [i["name"] for i in _operators(client, tid, sort="name", order="asc")["items"]]
    assert names == sorted(names)
    found = _operators(client, tid, q="MM")
    assert found["items"] and all("mm" in i["name"].lower() for i in found["items"])
    assert found["count"] == sum("mm" in i["name"].lower() for i in full["items"])
    one = _operators(client, tid, limit=1)
    assert len(one["items"]) == 1 and one["count"] == full["count"]
    assert one["items"][0] == full["items"][0]
    assert _operators(client, tid, q="no op has this name")["items"] == []


def test_without_python_frames_the_trees_are_empty_with_a_reason(
    client: TestClient, ingest: Ingest
) -> None:
    tid = ingest(H200)
    assert _operators(client, tid)["has_stacks"] is False
    body = client.get(f"/api/v1/traces/{tid}/operators/stacks").json()
    for tree in ("stacks", "modules"):
        assert body[tree]["nodes"] == []
        assert "with_" in body[tree]["reason"]


def _py(name: str, ts: float, dur: float) -> dict[str, Any]:
    return {"ph": "X", "cat": "python_function", "name": name, "pid": 1, "tid": 1, "ts": ts,
            "dur": dur, "args": {}}  # fmt: skip


def _op(name: str, ts: float, dur: float) -> dict[str, Any]:
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts,
            "dur": dur, "args": {}}  # fmt: skip


@SQLITE_ONLY
def test_stack_and_module_trees_of_a_known_trace(client: TestClient, ingest: Ingest) -> None:
    """Two calls of a script frame, each running a module with one Linear, and an op
    outside any module; the expected trees are written out by hand."""
    events = []
    for t in (0.0, 1000.0):
        events += [
            _py("train.py(10): <module>", t, 500.0),
            _py("nn.Module: Net_0", t + 10, 300.0),
            _py("nn.Module: Linear_0", t + 20, 100.0),
            _op("aten::linear", t + 30, 50.0),
            _op("aten::addmm", t + 35, 40.0),  # nested op: not drawn, its time is in linear
            _op("aten::zeros", t + 400, 20.0),
        ]
    tid = ingest(document(events), "stacks.pt.trace.json")
    body = client.get(f"/api/v1/traces/{tid}/operators/stacks").json()
    by_id = {n["id"]: n for n in body["stacks"]["nodes"]}

    def path(n: dict[str, Any]) -> tuple[str, ...]:
        return (*path(by_id[n["parent"]]), n["name"]) if n["parent"] else (n["name"],)

    stacks = {path(n): (n["total_ns"], n["self_ns"], n["count"]) for n in by_id.values()}
    script, net, lin = "train.py(10): <module>", "nn.Module: Net_0", "nn.Module: Linear_0"
    assert stacks == {
        (script,): (1_000_000, 1_000_000 - 600_000 - 40_000, 2),
        (script, net): (600_000, 400_000, 2),
        (script, net, lin): (200_000, 100_000, 2),
        (script, net, lin, "aten::linear"): (100_000, 100_000, 2),
        (script, "aten::zeros"): (40_000, 40_000, 2),
    }
    modules = {n["name"]: (n["total_ns"], n["count"]) for n in body["modules"]["nodes"]}
    assert modules == {"Net_0": (600_000, 2), "Linear_0": (200_000, 2)}
    assert body["stacks"]["reason"] is None and body["modules"]["reason"] is None
    capped = client.get(f"/api/v1/traces/{tid}/operators/stacks?max_nodes=2").json()
    assert [n["name"] for n in capped["stacks"]["nodes"]] == [script, net]
    assert capped["stacks"]["truncated"] is True
    ops = _operators(client, tid)
    assert ops["has_stacks"] is True and ops["has_modules"] is True


STACKS = REPO / "tests" / "data" / "torch" / "h200_ops_stack.pt.trace.json.gz"


def _frame_paths(events: list[dict[str, Any]], modules: bool) -> dict[tuple[str, ...], list[int]]:
    """Total ns and count per frame path, the path read from torch's own `Python parent id`
    links (perfdash nests frames by time instead). Module tree: only `nn.Module:` frames,
    named without the prefix."""
    frames = {e["args"]["Python id"]: e for e in events if e.get("cat") == "python_function"}
    out: dict[tuple[str, ...], list[int]] = defaultdict(lambda: [0, 0])
    for e in frames.values():
        if modules and not e["name"].startswith("nn.Module: "):
            continue
        path: list[str] = []
        f: dict[str, Any] | None = e
        while f is not None:
            if not modules or f["name"].startswith("nn.Module: "):
                path.append(f["name"].removeprefix("nn.Module: ") if modules else f["name"])
            f = frames.get(f["args"].get("Python parent id"))
        key = tuple(reversed(path))
        out[key][0] += _ns(e["dur"])
        out[key][1] += 1
    return out


@SQLITE_ONLY
def test_stack_and_module_trees_follow_torchs_parent_links(
    client: TestClient, ingest: Ingest
) -> None:
    events = _raw(STACKS)
    tid = ingest(STACKS)
    body = client.get(f"/api/v1/traces/{tid}/operators/stacks?max_nodes=20000").json()
    for tree, modules in (("stacks", False), ("modules", True)):
        nodes = {n["id"]: n for n in body[tree]["nodes"]}
        assert not body[tree]["truncated"]

        def path(n: dict[str, Any], nodes: dict[str, Any] = nodes) -> tuple[str, ...]:
            up = path(nodes[n["parent"]]) if n["parent"] else ()
            return (*up, n["name"])

        ours = {path(n): [n["total_ns"], n["count"]] for n in nodes.values()}
        expected = _frame_paths(events, modules)
        if not modules:  # op leaves hang under frames; compare the frames
            frame_names = {e["name"] for e in events if e.get("cat") == "python_function"}
            ours = {p: v for p, v in ours.items() if p[-1] in frame_names}
        assert ours == dict(expected), tree
    assert {p[-1] for p in _frame_paths(events, True)} >= {"Block_0", "Linear_0", "GELU_0"}


@SQLITE_ONLY
def test_call_stacks_are_the_frames_around_each_call(client: TestClient, ingest: Ingest) -> None:
    """Each call's innermost enclosing frame (the shortest `python_function` holding it),
    walked up by torch's `Python parent id`: the op's call sites, by CPU time."""
    events = _raw(STACKS)
    frames = [e for e in events if e.get("cat") == "python_function"]
    by_id = {f["args"]["Python id"]: f for f in frames}

    def path(f: dict[str, Any] | None) -> tuple[str, ...]:
        out = []
        while f is not None:
            out.append(f["name"])
            f = by_id.get(f["args"].get("Python parent id"))
        return tuple(reversed(out))

    tid = ingest(STACKS)
    ops = {i["name"]: i for i in _operators(client, tid)["items"]}
    for name in ("aten::linear", "aten::addmm", "aten::gelu", "aten::t"):  # none calls itself
        sites: dict[tuple[str, ...], list[int]] = defaultdict(lambda: [0, 0])
        for op in (e for e in events if e.get("cat") == "cpu_op" and e["name"] == name):
            around = [f for f in frames if f["tid"] == op["tid"] and f["ts"] <= op["ts"]
                      and op["ts"] + op["dur"] <= f["ts"] + f["dur"]]  # fmt: skip
            inner = min(around, key=lambda f: f["dur"]) if around else None
            if inner is not None:
                sites[path(inner)][0] += 1
                sites[path(inner)][1] += _ns(op["dur"])
        assert sites, name
        top = sorted(sites.items(), key=lambda kv: (-kv[1][1], kv[0]))[:3]
        expected = [{"frames": list(p), "count": c, "cpu_total_ns": t} for p, (c, t) in top]
        assert ops[name]["call_stacks"] == expected, name
    assert all(i["call_stacks"] == [] for i in _operators(client, ingest(H200))["items"])


NSYS = REPO / "tests" / "data" / "nsys" / "copies.sqlite"


@SQLITE_ONLY
def test_an_nsys_export_has_no_operators(client: TestClient, ingest: Ingest) -> None:
    """nsys records no framework ops: no `cpu_op` rows, and its NVTX ranges (listed as
    ranges, with CPU times) get no device time, which reaches a range only through ops."""
    body = _operators(client, ingest(NSYS))
    assert all(i["kind"] == "annotation" for i in body["items"])
    assert all(i["device_total_ns"] == 0 and i["kernels"] == [] for i in body["items"])
    assert body["has_stacks"] is False
