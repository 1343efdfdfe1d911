"""`/operators` against torch's own `key_averages()`, for every trace saved beside one.

Each `<name>.key_averages.json` next to a `<name>.pt.trace.json.gz` (tests/data/torch,
perf/data) was written by torch in the profiler's `on_trace_ready`, from the same run as
the trace: the independent answer. The bar (issue #21): count, device_time_total and,
where torch saved it, cpu_time_total (and the self times) per op name equal key_averages
for the top 20 ops by device time.

Rows compared: names that are `cpu_op` or `user_annotation` events in the raw file (torch
also lists runtime calls and Kineto's `overhead` events; the view does not), with device
time > 0. One torch artefact is left out, and counted: Kineto's `overhead` events
(`Activity Buffer Request`, `Lazy Function Loading`, on thread 0, around the first kernel
launch of a session) become CPU events of the op around them in torch, which subtracts
them from its self CPU time and links them to that op's first kernel a second and third
time (h200_cuda_graph: `aten::mul_` device total 6.147 µs = its 3.969 µs of kernels + 2 x
1.089 µs). Those events are not stored, so for an op whose calls enclose one, and the
ranges around it, only the count is compared.

Tolerance: 1 ns per call plus 1e-9 relative. The trace writes times as µs with three
decimals (whole ns), torch sums the same ns durations as float µs; an op's total is one
duration, its self time a difference of a few, so a row can be off by at most a rounding
of each call's `dur` and by the float sum's error, never more.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.factories import Ingest

REPO = Path(__file__).resolve().parents[2]
PAIRS = sorted(
    p
    for folder in (REPO / "tests" / "data" / "torch", REPO / "perf" / "data")
    for p in folder.glob("*.key_averages.json")
    if p.with_name(p.name.replace(".key_averages.json", ".pt.trace.json.gz")).exists()
)
TOP = 20
FIELDS = {  # key_averages field (µs) -> API field (ns)
    "count": "count",
    "device_time_total_us": "device_total_ns",
    "self_device_time_total_us": "device_self_ns",
    "cpu_time_total_us": "cpu_total_ns",
    "self_cpu_time_total_us": "cpu_self_ns",
}


def _raw(trace: Path) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = json.loads(gzip.decompress(trace.read_bytes()))["traceEvents"]
    return [e for e in events if e.get("ph") == "X"]


def _torch_ops(path: Path, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """key_averages' rows of operators and record_function ranges, top 20 by device time."""
    listed = {e["name"] for e in events if e.get("cat") in ("cpu_op", "user_annotation")}
    listed |= {"ProfilerStep*"} if any(n.startswith("ProfilerStep#") for n in listed) else set()
    entries = json.loads(path.read_text())["entries"]
    ops = [e for e in entries if e.get("device_type", "CPU") == "CPU" and e["name"] in listed]
    ops = [e for e in ops if e["device_time_total_us"] > 0]
    return sorted(ops, key=lambda e: -e["device_time_total_us"])[:TOP]


def _around_overhead(events: list[dict[str, Any]]) -> set[str]:
    """Names of ops and ranges whose span holds one of Kineto's `overhead` events."""
    overhead = [e for e in events if e.get("cat") == "overhead"]
    return {
        "ProfilerStep*" if e["name"].startswith("ProfilerStep#") else e["name"]
        for e in events
        if e.get("cat") in ("cpu_op", "user_annotation")
        for o in overhead
        if e["ts"] <= o["ts"] and o["ts"] + o["dur"] <= e["ts"] + e["dur"]
    }


def _close(ours: int, theirs_us: float, count: int) -> bool:
    theirs = theirs_us * 1000
    return abs(ours - theirs) <= count + 1e-9 * abs(theirs)


def test_pairs_are_found() -> None:
    assert len(PAIRS) >= 3, PAIRS


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: p.name.split(".")[0])
def test_operators_equal_key_averages(client: TestClient, ingest: Ingest, pair: Path) -> None:
    trace = pair.with_name(pair.name.replace(".key_averages.json", ".pt.trace.json.gz"))
    tid = ingest(trace)
    body = client.get(f"/api/v1/traces/{tid}/operators", params={"limit": 5000}).json()
    ours = {i["name"]: i for i in body["items"]}
    events = _raw(trace)
    expected = _torch_ops(pair, events)
    count_only = _around_overhead(events)
    assert 2 * len([e for e in expected if e["name"] not in count_only]) >= len(expected)
    assert expected, "no CPU rows with device time in the key_averages file"
    wrong: list[tuple[Any, ...]] = []
    for e in expected:
        row = ours.get(e["name"])
        if row is None:
            wrong.append((e["name"], "missing"))
            continue
        for theirs, field in FIELDS.items():
            if theirs not in e or (theirs != "count" and e["name"] in count_only):
                continue
            if theirs == "count":
                ok = row["count"] == e["count"]
            else:
                ok = _close(row[field], e[theirs], e["count"])
            if not ok:
                wrong.append((e["name"], field, row[field], e[theirs]))
    assert wrong == [], "\n".join(map(str, wrong))


def _as_torch_shapes(input_dims: str | None) -> str:
    """The trace's `Input Dims` as torch's in-memory `input_shapes` print: a TensorList
    argument, whose shapes the trace lists, is `[]` in memory."""
    dims = json.loads(input_dims) if input_dims else []
    return str([[] if d and isinstance(d[0], list) else d for d in dims])


BY_SHAPE = sorted(
    p
    for folder in (REPO / "tests" / "data" / "torch", REPO / "perf" / "data")
    for p in folder.glob("*.key_averages_by_shape.json")
)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
@pytest.mark.parametrize("pair", BY_SHAPE, ids=lambda p: p.name.split(".")[0])
def test_group_by_shape_equals_key_averages_by_input_shape(
    client: TestClient, ingest: Ingest, pair: Path
) -> None:
    """group=shape against `key_averages(group_by_input_shape=True)`: the same rows, with
    count, cpu_time_total and device_time_total per (name, input shapes). The view keeps a
    TensorList's shapes, which torch drops, so its rows are finer there: mapped back here."""
    trace = pair.with_name(pair.name.replace(".key_averages_by_shape.json", ".pt.trace.json.gz"))
    tid = ingest(trace)
    params = {"limit": 5000, "group": "shape"}
    body = client.get(f"/api/v1/traces/{tid}/operators", params=params).json()
    ours = {(i["name"], _as_torch_shapes(i["input_shapes"])): i for i in body["items"]}
    events = _raw(trace)
    listed = {e["name"] for e in events if e.get("cat") == "cpu_op"}
    count_only = _around_overhead(events)
    theirs = [e for e in json.loads(pair.read_text())["entries"] if e["name"] in listed]
    assert len(theirs) > 50
    wrong: list[tuple[Any, ...]] = []
    for e in theirs:
        row = ours.get((e["name"], e["input_shapes"]))
        if row is None or row["count"] != e["count"]:
            wrong.append((e["name"], e["input_shapes"], "count", row and row["count"], e["count"]))
            continue
        if e["name"] in count_only:
            continue
        for field, key in (
            ("cpu_total_ns", "cpu_time_total_us"),
            ("device_total_ns", "device_time_total_us"),
        ):
            if not _close(row[field], e[key], e["count"]):
                wrong.append((e["name"], e["input_shapes"], field, row[field], e[key]))
    assert wrong == [], "\n".join(map(str, wrong))
