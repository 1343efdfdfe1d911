"""`/traces/{id}/graphs` against the raw files: sqlite3 over the nsys export, `json` over Kineto.

Each replay's expected GPU work is what the raw file links to the `cudaGraphLaunch` call by
correlation id (in the same process for nsys), computed here without perfdash code.
"""

from __future__ import annotations

import csv
import gzip
import json
import sqlite3
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.conftest import CORPUS
from tests.factories import Ingest
from tests.views.kineto_builder import document, kernel

DATA = Path(__file__).resolve().parents[1] / "data"
NSYS_GRAPH = DATA / "nsys" / "train_step.sqlite"
GPU_TABLES = (
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
)
KINETO_GPU = ("kernel", "gpu_memcpy", "gpu_memset")

Replay = tuple[int, int, int, int, int]  # (first start, span, gpu ns, kernels, nodes)


def _replay(work: list[tuple[str, int, int]]) -> Replay:
    """(kind, start, end) rows of one launch -> the API's replay numbers."""
    start, end = min(w[1] for w in work), max(w[2] for w in work)
    kernels = sum(w[0] == "kernel" for w in work)
    return start, end - start, sum(w[2] - w[1] for w in work), kernels, len(work)


def _nsys_replays(path: Path) -> list[Replay]:
    with sqlite3.connect(path) as db:
        launches = db.execute(
            "SELECT r.correlationId, r.globalTid / 16777216 FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
            "JOIN StringIds s ON s.id = r.nameId WHERE s.value LIKE 'cudaGraphLaunch%'"
        ).fetchall()
        work: dict[tuple[int, int], list[tuple[str, int, int]]] = defaultdict(list)
        tables = {t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        for table in tables.intersection(GPU_TABLES):
            kind = "kernel" if table.endswith("KERNEL") else "other"
            for corr, pid, s, e in db.execute(
                f"SELECT correlationId, globalPid / 16777216, start, end FROM {table}"
            ):
                work[(corr, pid)].append((kind, s, e))
    return sorted(_replay(work[k]) for k in launches if work[k])


def _relative(replays: list[Replay]) -> list[Replay]:
    """Starts from the first replay's (torch adds a base time to Kineto's `ts`)."""
    t0 = min((r[0] for r in replays), default=0)
    return [(r[0] - t0, *r[1:]) for r in replays]


def _as_replays(body: dict[str, Any]) -> list[Replay]:
    return sorted(
        (r["start_ns"], r["span_ns"], r["gpu_ns"], r["kernels"], r["nodes"])
        for g in body["graphs"]
        for r in g["replays"]
    )


@pytest.mark.parametrize(("fixture", "launches"), [("train_step", 3), ("cuda_graph", 4)])
def test_nsys_graph_replays_equal_the_export(
    client: TestClient, ingest: Ingest, fixture: str, launches: int
) -> None:
    path = DATA / "nsys" / f"{fixture}.sqlite"
    expected = _nsys_replays(path)
    assert len(expected) == launches, "the fixture's replays (tests/data/nsys/README.md)"
    trace_id = ingest(path)
    body = client.get(f"/api/v1/traces/{trace_id}/graphs").json()
    assert _as_replays(body) == expected
    assert body["launches"] == launches and body["unattributed_nodes"] == 0
    (graph,) = body["graphs"]
    with sqlite3.connect(path) as db:
        nodes = db.execute(
            "SELECT count(DISTINCT graphNodeId) FROM CUPTI_ACTIVITY_KIND_KERNEL "
            "WHERE graphNodeId IS NOT NULL"
        ).fetchone()[0]
    assert graph["node_ids"] == nodes and graph["launches"] == launches
    assert graph["kernels_per_replay"] == nodes and graph["graph_id"] is None
    assert graph["gpu_ns_total"] == sum(r[2] for r in expected)
    assert graph["span_ns_min"] == min(r[1] for r in expected)
    assert sum(k["count"] for k in graph["top_kernels"]) == nodes * launches


def test_graph_kernels_equal_nsys_cuda_kern_exec_sum(client: TestClient, ingest: Ingest) -> None:
    """nsys's own per-API kernel report lists the kernels launched by `cudaGraphLaunch`."""
    with (DATA / "nsys" / "cuda_graph_cuda_kern_exec_sum.csv").open() as f:
        rows = [r for r in csv.DictReader(f) if r["API Name"].startswith("cudaGraphLaunch")]
    assert len(rows) == 4
    trace_id = ingest(DATA / "nsys" / "cuda_graph.sqlite")
    (graph,) = client.get(f"/api/v1/traces/{trace_id}/graphs").json()["graphs"]
    got = {k["name"]: k for k in graph["top_kernels"]}
    assert set(got) == {r["Kernel Name"] for r in rows}
    for r in rows:
        k = got[r["Kernel Name"]]
        assert k["count"] == int(r["Count"])
        assert k["total_ns"] / k["count"] == pytest.approx(float(r["KAvg (ns)"]), abs=0.051)


def _kineto_replays(path: Path) -> tuple[int, list[Replay]]:
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    launches = {e["args"]["correlation"] for e in events if e.get("name") == "cudaGraphLaunch"}
    work: dict[int, list[tuple[str, int, int]]] = defaultdict(list)
    for e in events:
        if e.get("cat") in KINETO_GPU and e["args"].get("correlation") in launches:
            s = round(e["ts"] * 1000)
            work[e["args"]["correlation"]].append((e["cat"], s, s + round(e["dur"] * 1000)))
    return len(launches), sorted(_replay(w) for w in work.values())


@pytest.mark.parametrize(
    "path",
    [
        DATA / "torch" / "h200_cuda_graph.pt.trace.json.gz",
        CORPUS / "kineto" / "hta__trace_diff_test_rank1_of_2.json.gz",
        CORPUS / "kineto" / "hta__negative_queue_length_rank0_of_16.json.gz",
    ],
    ids=lambda p: p.name,
)
def test_kineto_graph_replays_equal_the_raw_json(
    client: TestClient, ingest: Ingest, path: Path
) -> None:
    """Kineto gives graph kernels no graph or node id (torch 2.11 on the H200 neither): the
    launch's correlation is the only link."""
    if not path.exists():
        pytest.skip(f"corpus file {path} absent")
    launches, expected = _kineto_replays(path)
    trace_id = ingest(path)
    body = client.get(f"/api/v1/traces/{trace_id}/graphs").json()
    assert body["launches"] == launches
    assert _relative(_as_replays(body)) == _relative(expected)
    assert sum(g["launches"] for g in body["graphs"]) == len(expected)


def test_torch_graph_trace_against_key_averages(client: TestClient, ingest: Ingest) -> None:
    """torch's own `key_averages()`: 4 `cudaGraphLaunch` calls, each graph kernel 4 times."""
    path = DATA / "torch" / "h200_cuda_graph.pt.trace.json.gz"
    averages = json.loads((DATA / "torch" / "h200_cuda_graph.key_averages.json").read_text())
    trace_id = ingest(path)
    (graph,) = client.get(f"/api/v1/traces/{trace_id}/graphs").json()["graphs"]
    by_key = {e["name"]: e for e in averages["entries"]}
    assert graph["launches"] == by_key["cudaGraphLaunch"]["count"] == 4
    assert graph["kernels_per_replay"] == 4
    for k in graph["top_kernels"]:
        assert k["count"] == by_key[k["name"]]["count"] == 4


def _graph_doc() -> bytes:
    """Two graphs (ids 7 and 9) replayed 2 and 1 times, a launch with no GPU work, a kernel
    with graph node id 0 (not a graph's) and one graph kernel whose launch is not traced."""

    def launch(ts: float, corr: int) -> dict[str, Any]:
        return {"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 1,
                "tid": 1, "ts": ts, "dur": 2.0, "args": {"correlation": corr}}  # fmt: skip

    def node(name: str, ts: float, dur: float, corr: int, graph: int, node: int) -> dict[str, Any]:
        k = kernel(name, ts, dur, corr)
        k["args"] |= {"graph id": graph, "graph node id": node}
        return k

    return document([
        launch(10.0, 1), node("a", 20.0, 5.0, 1, 7, 70), node("b", 26.0, 4.0, 1, 7, 71),
        launch(40.0, 2), node("a", 50.0, 6.0, 2, 7, 70), node("b", 57.0, 4.0, 2, 7, 71),
        launch(60.0, 3), node("c", 70.0, 10.0, 3, 9, 90),
        launch(90.0, 4),
        node("plain", 100.0, 1.0, 5, 0, 0), node("orphan", 110.0, 1.0, 6, 9, 91),
    ])  # fmt: skip


def test_graphs_by_graph_id_with_edge_cases(client: TestClient, ingest: Ingest) -> None:
    trace_id = ingest(_graph_doc(), "graphs.json")
    body = client.get(f"/api/v1/traces/{trace_id}/graphs").json()
    assert body["launches"] == 4 and body["unattributed_nodes"] == 1
    first, second = body["graphs"]
    assert (first["graph"], first["graph_id"], first["launches"]) == (1, 7, 2)
    assert [(r["start_ns"], r["span_ns"], r["gpu_ns"]) for r in first["replays"]] == [
        (20_000, 10_000, 9_000), (50_000, 11_000, 10_000)]  # fmt: skip
    assert first["top_kernels"][0] == {"name": "a", "count": 2, "total_ns": 11_000}
    assert (second["graph_id"], second["launches"], second["gpu_ns_total"]) == (9, 1, 10_000)
    capped = client.get(f"/api/v1/traces/{trace_id}/graphs", params={"replays": 1}).json()
    assert [len(g["replays"]) for g in capped["graphs"]] == [1, 1]
    assert capped["graphs"][0]["launches"] == 2


def test_no_graphs_and_bad_parameters(client: TestClient, ingest: Ingest) -> None:
    trace_id = ingest(document([kernel("k", 10.0, 5.0, 1)]), "bare.json")
    body = client.get(f"/api/v1/traces/{trace_id}/graphs").json()
    assert body["graphs"] == [] and "cudaGraphLaunch" in body["note"]
    response = client.get(f"/api/v1/traces/{trace_id}/graphs", params={"replays": -1})
    assert response.status_code == 422 and "replays" in response.text
    missing = "00000000-0000-0000-0000-000000000000"
    assert client.get(f"/api/v1/traces/{missing}/graphs").status_code == 404
