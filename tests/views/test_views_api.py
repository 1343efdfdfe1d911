"""Roofline, memory and findings endpoints on SQLite and PostgreSQL, with real traces.

Expected numbers are computed here straight from the trace files (JSON parsed with
`json`, no perfdash code), so the analyses are checked against an independent answer.
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update
from sqlalchemy.engine import Engine

from backend.core.config import Settings
from backend.models import Trace
from backend.services.loading.pipeline import ingest_trace
from ingest.registry import SUPPORTED_FORMATS
from tests.conftest import CORPUS
from tests.factories import Ingest, upload, upload_trace
from tests.views.kineto_builder import document, kernel

CORPUS_NCU = CORPUS / "h200" / "ncu2025.3_roofline_raw.csv"
DTYPE = {"float": 4, "c10::BFloat16": 2}


def _raw(path: Path) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    return events


def _expected_mm_points(path: Path) -> dict[tuple[str, str], tuple[int, float, float, int]]:
    """Per (longest kernel, op): launches, FLOPs, bytes and kernel ns of every aten::mm call."""
    events = _raw(path)
    ops = {e["args"]["External id"]: e for e in events if e.get("cat") == "cpu_op"
           and e["name"] == "aten::mm"}  # fmt: skip
    launched: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for e in events:
        if e.get("cat") == "kernel" and e["args"].get("External id") in ops:
            launched[e["args"]["External id"]].append(e)
    out: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0.0, 0.0, 0])
    for ext, ks in launched.items():
        (m, k), (_, n) = ops[ext]["args"]["Input Dims"][:2]
        size = DTYPE[ops[ext]["args"]["Input type"][0]]
        acc = out[(max(ks, key=lambda e: e["dur"])["name"], "aten::mm")]
        acc[0] += 1
        acc[1] += 2 * m * k * n
        acc[2] += (m * k + k * n + m * n) * size
        acc[3] += sum(round(e["dur"] * 1000) for e in ks)
    return {key: (int(v[0]), v[1], v[2], int(v[3])) for key, v in out.items()}


def test_estimated_roofline_of_a_torch_trace(
    client: TestClient, ingest: Ingest, h200_trace: Path
) -> None:
    trace_id = ingest(h200_trace, "h200.json.gz")
    body = client.get(f"/api/v1/traces/{trace_id}/roofline").json()
    assert body["kind"] == "estimated" and "Estimated" in body["note"]
    expected = _expected_mm_points(h200_trace)
    got = {(p["name"], p["op"]): p for p in body["points"]}
    assert set(got) == set(expected)
    for key, (count, flops, nbytes, ns) in expected.items():
        p = got[key]
        assert (p["count"], p["flops"], p["bytes"], p["time_ns"]) == (count, flops, nbytes, ns)
        assert p["intensity"] == pytest.approx(flops / nbytes)
        assert p["flops_per_s"] == pytest.approx(flops / (ns / 1e9))
        assert p["estimated"] is True
    device = body["devices"][0]
    assert device["name"] == "NVIDIA H200" and device["peak_dram_bytes_per_s"] == 4.8e12
    assert device["source_url"] == "https://www.nvidia.com/en-us/data-center/h200/"
    roofs = {r["precision"]: r["peak_flops_per_s"] for r in device["roofs"]}
    for p in body["points"]:
        roof = roofs["fp16_tensor"] if p["precision"] == "bf16" else roofs[p["precision"]]
        ridge = roof / 4.8e12
        assert p["bound"] == ("memory" if p["intensity"] < ridge else "compute")


DDP = Path(__file__).resolve().parents[1] / "data" / "ddp"


def test_estimated_roofline_matches_ops_and_kernels_within_each_rank(
    client: TestClient, engine: Engine, settings: Settings
) -> None:
    """Both ranks of a DDP job number their ops with the same External ids; each op's
    kernels are its own rank's, so the job's points are each rank file's, on its GPU."""
    files = [DDP / f"ddp_rank{r}.pt.trace.json.gz" for r in (0, 1)]
    ids = [{e["args"]["External id"] for e in _raw(f) if e.get("cat") == "cpu_op"
            and e["name"] == "aten::mm"} for f in files]  # fmt: skip
    assert ids[0] & ids[1], "the ranks no longer share External ids: the test checks nothing"
    expected = {}
    for f in files:
        (device,) = {e["args"]["device"] for e in _raw(f) if e.get("cat") == "kernel"}
        expected |= {(name, op, device): v for (name, op), v in _expected_mm_points(f).items()}
    trace_id = upload(client, [(f.name, f.read_bytes()) for f in files])["id"]
    assert ingest_trace(engine=engine, settings=settings, trace_id=trace_id) == "ready"
    body = client.get(f"/api/v1/traces/{trace_id}/roofline").json()
    got = {(p["name"], p["op"], p["device"]): (p["count"], p["flops"], p["bytes"], p["time_ns"])
           for p in body["points"] if p["op"] == "aten::mm"}  # fmt: skip
    assert got == expected


def test_roofs_only_reads_no_points(client: TestClient, ingest: Ingest, h200_trace: Path) -> None:
    trace_id = ingest(h200_trace, "h200.json.gz")
    body = client.get(f"/api/v1/traces/{trace_id}/roofline", params={"points": "false"}).json()
    assert body["points"] == [] and body["devices"][0]["roofs"]


def test_roofline_without_shapes_says_how_to_get_points(client: TestClient, ingest: Ingest) -> None:
    trace_id = ingest(document([kernel("k", 10.0, 5.0)], gpu="Tesla T4"), "t4.json")
    body = client.get(f"/api/v1/traces/{trace_id}/roofline").json()
    assert body["kind"] == "none" and body["points"] == [] and body["devices"] == []
    assert "record_shapes=True" in body["note"]
    assert "No peak FLOP/s or bandwidth is known" in body["note"]


@pytest.mark.skipif(
    not CORPUS_NCU.exists(), reason="the corpus (PERFDASH_TEST_CORPUS) is not present"
)
def test_measured_roofline_of_an_ncu_report(client: TestClient, ingest: Ingest) -> None:
    if "ncu_csv" not in {str(f) for f in SUPPORTED_FORMATS}:
        pytest.skip("the Nsight Compute parser has not landed (ncu_csv not in SUPPORTED_FORMATS)")
    from ingest import parse_file  # the parsed events are the input; the arithmetic is checked

    trace_id = ingest(CORPUS_NCU, CORPUS_NCU.name)
    body = client.get(f"/api/v1/traces/{trace_id}/roofline").json()
    parsed = parse_file(CORPUS_NCU, max_bytes=1 << 30, source=CORPUS_NCU.name)
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    keys = ("flops_fp64", "flops_fp32", "flops_fp16", "flops_tensor")
    for e in parsed.events:
        flops = sum(float((e.args or {}).get(k) or 0) for k in keys)
        if flops > 0 and e.args and "dram_bytes" in e.args:
            acc = sums[e.name]
            acc[0] += flops
            acc[1] += float(e.args["dram_bytes"])
            acc[2] += e.dur_ns
    assert body["kind"] == "measured"
    got = {p["name"]: p for p in body["points"]}
    assert set(got) == set(sums)
    for name, (flops, nbytes, ns) in sums.items():
        assert got[name]["intensity"] == pytest.approx(flops / nbytes)
        assert got[name]["flops_per_s"] == pytest.approx(flops / (ns / 1e9))
        assert got[name]["estimated"] is False
    device = parsed.header.devices[0].properties
    roofs = {r["precision"] for r in body["devices"][0]["roofs"]}
    assert body["devices"][0]["peak_dram_bytes_per_s"] == device["peak_dram_bytes_per_s"]
    assert roofs == {k.removeprefix("peak_flops_") for k in device if k.startswith("peak_flops_")}


def _expected_memory(path: Path) -> tuple[int, float, int]:
    """Peak allocated on GPU 0, fragmentation at that sample, and the number of samples."""
    gpu = [e["args"] for e in _raw(path) if e.get("name") == "[memory]"
           and e["args"].get("Device Type") == 1]  # fmt: skip
    peak = max(gpu, key=lambda a: a["Total Allocated"])
    frag = 100 * (peak["Total Reserved"] - peak["Total Allocated"]) / peak["Total Reserved"]
    return peak["Total Allocated"], frag, len(gpu)


def test_memory_series_peaks_and_fragmentation(
    client: TestClient, engine: Engine, ingest: Ingest, h200_trace: Path
) -> None:
    trace_id = ingest(h200_trace, "h200.json.gz")
    peak, frag, samples = _expected_memory(h200_trace)
    for params in ({}, {"max_points": 10}):
        body = client.get(f"/api/v1/traces/{trace_id}/memory", params=params).json()
        (device,) = body["devices"]
        assert device["peak_allocated"] == peak and device["samples"] == samples
        assert device["fragmentation_at_peak_pct"] == pytest.approx(frag, abs=1e-3)
        assert max(device["allocated"]) == peak, "thinning must keep the peak"
        assert len(device["t_ns"]) <= params.get("max_points", 2000)
    # A trace ingested before summaries had memory series is read from its events instead.
    with engine.begin() as conn:
        conn.execute(update(Trace).where(Trace.id == trace_id).values(summary={"events": 1}))  # type: ignore[arg-type]
    legacy = client.get(f"/api/v1/traces/{trace_id}/memory").json()
    assert legacy["source"] == "events"
    assert legacy["devices"][0]["peak_allocated"] == peak
    assert legacy["devices"][0]["fragmentation_at_peak_pct"] == pytest.approx(frag, abs=1e-3)


def test_memory_of_a_trace_without_memory_events(client: TestClient, ingest: Ingest) -> None:
    trace_id = ingest(document([kernel("k", 10.0, 5.0)]), "nomem.json")
    body = client.get(f"/api/v1/traces/{trace_id}/memory").json()
    assert body["devices"] == [] and "profile_memory=True" in body["note"]


def test_findings_carry_the_summary_numbers(
    client: TestClient, ingest: Ingest, h200_trace: Path
) -> None:
    trace_id = ingest(h200_trace, "h200.json.gz")
    summary = client.get(f"/api/v1/traces/{trace_id}/summary").json()["summary"]
    items = {
        f["rule"]: f for f in client.get(f"/api/v1/traces/{trace_id}/findings").json()["items"]
    }
    idle = summary["gpu"]["time"]["idle_pct"]
    assert idle >= 20, "the fixture's GPU is mostly idle (small kernels, host copies)"
    assert items["gpu_idle"]["value"] == idle
    assert items["gpu_idle"]["text"].startswith(f"GPU idle {idle:.1f}% of its active span")
    pageable = summary["transfers"]["h2d_pageable_pct"]
    assert items["pageable_h2d"]["value"] == pageable


def test_a_trace_not_ingested_yet_has_empty_analyses(client: TestClient) -> None:
    trace_id = upload_trace(client, document([kernel("k", 10.0, 5.0)]), "queued.json")
    roofline = client.get(f"/api/v1/traces/{trace_id}/roofline").json()
    assert roofline["kind"] == "none" and roofline["points"] == []
    memory = client.get(f"/api/v1/traces/{trace_id}/memory").json()
    assert memory["devices"] == [] and memory["source"] == "events"
    assert client.get(f"/api/v1/traces/{trace_id}/findings").status_code == 200


def test_a_ready_trace_without_its_dataset_says_to_reindex(
    client: TestClient, engine: Engine, ingest: Ingest, h200_trace: Path
) -> None:
    trace_id = ingest(h200_trace, "h200.json.gz")
    with engine.begin() as conn:
        conn.execute(update(Trace).where(Trace.id == trace_id).values(dataset=None))  # type: ignore[arg-type]
    response = client.get(f"/api/v1/traces/{trace_id}/roofline")
    assert response.status_code == 404 and "reindex" in response.json()["detail"]


@pytest.mark.parametrize("path", ["roofline", "memory", "findings"])
def test_unknown_trace_is_404(client: TestClient, path: str) -> None:
    response = client.get(f"/api/v1/traces/nope/{path}")
    assert response.status_code == 404 and "nope" in response.json()["detail"]
