"""`GET /traces/{id}/compile` against the raw trace JSON and torch's own compile_times table.

The expected numbers are computed here from the gzipped Chrome JSON with the json module:
phase totals are sums of the `<phase> (dynamo_timed)` ranges, compile time is the union of
all of those ranges (the union of nested ranges is the union of the top-level ones), the
span is first to last event. `h200_compile.compile_times.json` is what
`torch._dynamo.utils.compile_times(repr="csv")` printed in the same process.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.conftest import DATA, app_with_traces

TORCH = DATA / "torch"
NAMES = ("h200_compile", "h200_train_step", "h200_compiled_steps")
SUFFIX = " (dynamo_timed)"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, dict[str, str]]]:
    paths = {n: TORCH / f"{n}.pt.trace.json.gz" for n in NAMES}
    with app_with_traces(tmp_path_factory.mktemp("compile"), paths) as (client, _, traces):
        yield client, traces


def _get(world: tuple[TestClient, dict[str, str]], name: str, query: str = "") -> Any:
    client, traces = world
    response = client.get(f"/api/v1/traces/{traces[name]}/compile{query}")
    assert response.status_code == 200, response.text
    return response.json()


def _events(name: str) -> list[dict[str, Any]]:
    with gzip.open(TORCH / f"{name}.pt.trace.json.gz") as f:
        events: list[dict[str, Any]] = json.load(f)["traceEvents"]
    return events


def _ns(us: float) -> int:
    return round(us * 1000)


def _union(ranges: list[tuple[int, int]]) -> int:
    total, reach = 0, -1
    for start, end in sorted(ranges):
        if end > max(start, reach):
            total += end - max(start, reach)
        reach = max(reach, end)
    return total


def test_phases_compiles_and_compile_time_match_the_raw_json(world: Any) -> None:
    body = _get(world, "h200_compile")
    events = [e for e in _events("h200_compile") if e.get("ph") == "X"]
    phases = [e for e in events if e["name"].endswith(SUFFIX)]
    counts = Counter(e["name"].removesuffix(SUFFIX) for e in phases)
    totals: Counter[str] = Counter()
    for e in phases:
        totals[e["name"].removesuffix(SUFFIX)] += _ns(e["dur"])
    top = sorted(totals, key=lambda n: -totals[n])[:10]
    assert [p["name"] for p in body["phases"]] == top
    for p in body["phases"]:  # each stored range rounds to 1 ns
        assert p["count"] == counts[p["name"]]
        assert p["total_ns"] == pytest.approx(totals[p["name"]], abs=p["count"])
        assert 0 <= p["self_ns"] <= p["total_ns"]
    assert body["phase_count"] == len(totals)
    ranges = [(_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])) for e in phases]
    assert body["compile_ns"] == pytest.approx(_union(ranges), abs=len(ranges))
    # the span of the events; the profiler's own "PyTorch Profiler (0)" range (cat Trace),
    # which is no event of the program, is left out
    timed = [e for e in events if e.get("cat") != "Trace"]
    span = max(_ns(e["ts"]) + _ns(e["dur"]) for e in timed) - min(_ns(e["ts"]) for e in timed)
    assert body["run_ns"] == pytest.approx(span, abs=1000)
    assert body["compile_pct"] == pytest.approx(100 * body["compile_ns"] / body["run_ns"])
    # the frames torch named in its annotations: 0 and 1 (the graph break's resume frame),
    # each compiled twice (the second batch size)
    ids = {m[1] for e in events if (m := re.search(r"compile_id=(\d+/\d+)", e["name"]))}
    assert [c["compile_id"] for c in body["compiles"]] == ["0/0", "1/0", "0/1", "1/1"]
    assert set(ids) == {"0/0", "1/0", "0/1", "1/1"}
    assert body["graphs_compiled"] == counts["_compile.compile_inner"] == 4
    assert (body["frames"], body["recompiles"], body["recompiled_frames"]) == ([0, 1], 2, [0, 1])
    assert body["graph_breaks"] == 1
    regions = Counter(e["name"] for e in events if e["name"].startswith("Torch-Compiled Region"))
    got = {r["name"]: r["count"] for r in body["regions"]}
    assert {n: got[n] for n in regions} == dict(regions)


def test_compile_time_against_wall_time_and_compile_times(world: Any) -> None:
    """torch's compile_times sums the same dynamo_timed blocks with its own timer, which
    also covers the profiler's bookkeeping around each range: it reads a little longer,
    within a millisecond per call; its phases missing from the trace are the ones dynamo
    times without a profiler range (get_fake_value, create_proxy, ...)."""
    body = _get(world, "h200_compile", "?top=1000")
    fixture = json.loads((TORCH / "h200_compile.compile_times.json").read_text())
    table = dict(zip(*fixture["compile_times_csv"], strict=True))
    ours = {p["name"]: p for p in body["phases"]}
    assert set(ours) <= set(table)
    for name, p in ours.items():
        theirs = float(table[name]) * 1e9
        assert p["total_ns"] <= theirs <= p["total_ns"] + 1e6 * p["count"], name
    inner = ours["_compile.compile_inner"]["total_ns"]
    assert inner / (float(table["_compile.compile_inner"]) * 1e9) == pytest.approx(1, rel=1e-3)
    wall = fixture["wall"]  # perf_counter around the first call and the recompiling call
    compiling_calls = wall["first_call_ns"] + wall["recompile_call_ns"]
    assert inner < body["compile_ns"] < compiling_calls


def test_trace_without_compile_ranges_is_empty(world: Any) -> None:
    body = _get(world, "h200_train_step")
    raw = [e for e in _events("h200_train_step") if SUFFIX in e.get("name", "")]
    assert raw == []
    assert body["phases"] == [] and body["compiles"] == [] and body["regions"] == []
    assert body["compile_ns"] == 0 and body["graph_breaks"] is None
    assert "No torch.compile ranges" in body["note"]


def test_steady_state_compiled_steps_show_regions_only(world: Any) -> None:
    """Compiled before the profiler started: no phases, but the compiled regions ran."""
    body = _get(world, "h200_compiled_steps")
    names = Counter(e["name"] for e in _events("h200_compiled_steps") if e.get("ph") == "X")
    assert body["phases"] == [] and body["compile_ns"] == 0 and body["compile_pct"] == 0
    got = {r["name"]: r["count"] for r in body["regions"]}
    assert got["Torch-Compiled Region: 0/0"] == names["Torch-Compiled Region: 0/0"] > 0
    assert got["TorchDynamo Cache Lookup"] == names["TorchDynamo Cache Lookup"]
    assert "before the profiler started" in body["note"]


@pytest.mark.parametrize(("query", "status"), [("?top=0", 422), ("?top=1001", 422),
                                                ("?top=x", 422), ("?top=1", 200)])  # fmt: skip
def test_limits(world: Any, query: str, status: int) -> None:
    client, traces = world
    response = client.get(f"/api/v1/traces/{traces['h200_compile']}/compile{query}")
    assert response.status_code == status, response.text
    if status == 422:
        assert "top" in response.text
    else:
        assert len(response.json()["phases"]) == 1


def test_unknown_trace_is_404(world: Any) -> None:
    client, _ = world
    assert client.get("/api/v1/traces/0123456789abcdef/compile").status_code == 404


def _op(name: str, ts: float, dur: float, tid: int = 1, cat: str = "cpu_op") -> dict[str, Any]:
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur}


def test_older_torch_names_threads_and_overlaps(client: TestClient, ingest: Any) -> None:
    """torch 2.0-2.4 names (`_compile.<locals>.compile_inner`, no compile ids), two threads,
    and a phase that overlaps the next top-level one without nesting in it."""
    inner = "_compile.<locals>.compile_inner" + SUFFIX
    events = [
        _op(inner, 0, 100), _op("OutputGraph.call_user_compiler" + SUFFIX, 10, 50),
        _op("compile_fx_inner" + SUFFIX, 20, 30),
        _op("build_guards" + SUFFIX, 90, 30),  # overlaps compile_inner's end: top level
        _op(inner, 0, 40, tid=2),  # another thread: its time adds
        _op("Torch-Compiled Region", 200, 10), _op("TorchDynamo Cache Lookup", 199, 1),
        _op("aten::mm", 300, 5),
    ]  # fmt: skip
    doc = {"schemaVersion": 1, "traceEvents": events}
    trace_id = ingest(json.dumps(doc).encode(), "old_torch.pt.trace.json")
    response = client.get(f"/api/v1/traces/{trace_id}/compile")
    assert response.status_code == 200, response.text
    body = response.json()
    phases = {p["name"]: (p["count"], p["total_ns"], p["self_ns"]) for p in body["phases"]}
    assert phases == {
        "_compile.<locals>.compile_inner": (2, 140_000, 90_000),  # 100 - 50; + 40 on tid 2
        "OutputGraph.call_user_compiler": (1, 50_000, 20_000),
        "compile_fx_inner": (1, 30_000, 30_000),
        "build_guards": (1, 30_000, 30_000),
    }
    assert body["compile_ns"] == 120_000 + 40_000  # [0, 120) on tid 1, [0, 40) on tid 2
    assert body["run_ns"] == 305_000
    assert body["graphs_compiled"] == 2 and body["recompiles"] == 0
    assert body["graph_breaks"] is None and body["frames"] == []
    assert [c["compile_id"] for c in body["compiles"]] == [None, None]
    assert {r["name"] for r in body["regions"]} == {
        "Torch-Compiled Region",
        "TorchDynamo Cache Lookup",
    }
