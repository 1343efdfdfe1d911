"""Figures a reader must be able to trust, through the API and the Overview tab (issue #20,
item 4): Nsight Compute files, which have no timeline, and a real two-rank job.

Expected numbers come from the files themselves, read with the csv/json modules here, or
from the vendors' datasheets; never from perfdash's own code.
"""

from __future__ import annotations

import csv
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest
from dash.development.base_component import Component
from fastapi.testclient import TestClient

from dashboard.components.overview_panel import overview_panel
from dashboard.components.trace_summary import trace_summary
from tests.conftest import CORPUS, DATA
from tests.factories import Ingest

NCU = DATA / "ncu"
# The roofline's SQL (per-row launch weights read from JSON) runs on both engines in
# test_ncu_summary_rows_count_their_invocations; the rest needs one engine.
SQLITE_ONLY = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


def _texts(component: Any) -> list[str]:
    """Every string in a component tree, depth first."""
    if isinstance(component, str):
        return [component]
    if isinstance(component, list | tuple):
        return [t for c in component for t in _texts(c)]
    if isinstance(component, Component):
        return _texts(getattr(component, "children", None))
    return []


def _overview(client: TestClient, trace_id: str) -> str:
    """The Overview tab as the page builds it from the API's answers, as text."""
    api = f"/api/v1/traces/{trace_id}"
    summary = client.get(f"{api}/summary").json()["summary"]
    peaks = client.get(f"{api}/roofline", params={"points": "false"}).json()["devices"]
    findings = client.get(f"{api}/findings").json()["items"]
    kernels = client.get(f"{api}/kernels", params={"limit": 10}).json()
    panel = overview_panel(client.get(api).json(), summary, peaks, findings, kernels, "t")
    return "\n".join(_texts(panel))


def _durations(path: Path) -> dict[str, tuple[int, float]]:
    """Kernel name -> (Invocations, Average ns) of a per-kernel summary's Duration rows."""
    with path.open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["Metric Name"] == "Duration"]
    assert {r["Metric Unit"] for r in rows} == {"us"}
    return {r["Kernel Name"]: (int(r["Invocations"]), 1000 * float(r["Average"])) for r in rows}


def test_ncu_summary_rows_count_their_invocations(client: TestClient, ingest: Ingest) -> None:
    path = NCU / "gemm_elementwise_summary.csv"
    trace_id = ingest(path, path.name)
    want = _durations(path)
    kernels = client.get(f"/api/v1/traces/{trace_id}/kernels", params={"limit": 50}).json()
    got = {k["name"]: (k["count"], k["total_ns"]) for k in kernels["items"]}
    assert got == {n: (count, count * round(avg)) for n, (count, avg) in want.items()}
    points = client.get(f"/api/v1/traces/{trace_id}/roofline").json()["points"]
    assert {p["name"]: (p["count"], p["time_ns"]) for p in points} == got
    assert sum(p["time_share"] for p in points) == pytest.approx(1.0)


@SQLITE_ONLY
def test_ncu_details_has_a_device_roofs_and_no_timeline(client: TestClient, ingest: Ingest) -> None:
    path = NCU / "gemm_elementwise_details.csv"
    trace_id = ingest(path, path.name)
    summary = client.get(f"/api/v1/traces/{trace_id}/summary").json()["summary"]
    assert summary["timeline"] is False
    assert summary["gpu"]["time"] is None
    assert all(d["time"] is None for d in summary["devices"]) and summary["idle_gaps"] == []
    roofline = client.get(f"/api/v1/traces/{trace_id}/roofline").json()
    (device,) = roofline["devices"]
    assert device["name"] == "NVIDIA GPU (compute capability 9.0, 132 SMs)"
    assert "derived" in device["source"] and len(device["roofs"]) == 4
    # The GEMM (2 x 4096^3 FLOP in ~175 us, ~780 FLOP/byte) is compute-bound, the add
    # (1 FLOP per 12 bytes) memory-bound, on any H100/H200-class roofline.
    bound = {p["name"][:12]: p["bound"] for p in roofline["points"]}
    assert bound == {"nvjet_sm90_t": "compute", "void at::vec": "memory"}
    text = _overview(client, trace_id)
    assert "GPU utilization" not in text and "100.0%" not in text and "GPU idle" not in text
    assert "no timeline" in text
    assert "GPU 0: NVIDIA GPU (compute capability 9.0, 132 SMs)" in text
    assert ": ?" not in text and "unknown device" not in text
    header = "\n".join(_texts(trace_summary(client.get(f"/api/v1/traces/{trace_id}").json(), "t")))
    assert "no timeline" in header and "711" not in header  # no serial "duration"


@pytest.fixture
def ddp_job(tmp_path: Path) -> Path:
    archive = tmp_path / "job.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        for rank in (0, 1):
            name = f"ddp_rank{rank}.pt.trace.json.gz"
            tf.add(DATA / "ddp" / name, f"run/{name}")
    return archive


@SQLITE_ONLY
def test_multi_rank_devices_and_labelled_peaks(
    client: TestClient, ingest: Ingest, ddp_job: Path
) -> None:
    trace_id = ingest(ddp_job, ddp_job.name)
    text = _overview(client, trace_id)
    lines = [line for line in text.splitlines() if "GPU " in line and "NVIDIA H200" in line]
    # Each rank's trace lists both GPUs of the host.
    heads = [line.split(" · ")[0] + " · " + line.split(" · ")[1] for line in lines]
    assert heads == [f"rank {r} · GPU {g}: NVIDIA H200" for r in (0, 1) for g in (0, 1)]
    # H200 datasheet (dense): bf16/fp16 tensor 989.5 TFLOP/s, fp8 1,979 TFLOP/s. Every peak
    # carries its precision; the fp8 one is not shown as "the" peak of a bf16 run.
    assert "fp16/bf16 tensor 989.5 TFLOP/s" in lines[0] and "fp8 tensor 2.0 PFLOP/s" in lines[0]
    assert "peak" not in lines[0]
    # Forward, backward and optimizer are annotated (DistributedDataParallel.forward,
    # autograd's evaluate_function ops, Optimizer.step#...); what is missing is memory.
    assert "Memory was not profiled" in text and "phases were annotated" not in text


LLAMA = CORPUS / "rocprof_v1" / "llamacpp_r9700__results.json"


@SQLITE_ONLY
@pytest.mark.skipif(not LLAMA.exists(), reason="../shared/corpus absent")
def test_no_pytorch_advice_for_a_llama_cpp_hip_trace(client: TestClient, ingest: Ingest) -> None:
    """llama.cpp's kernels (ggml) on a Radeon, through rocprof: no ATen or Inductor kernel
    in it, so no torch.compile advice."""
    raw = json.loads(LLAMA.read_text())
    names = {e["name"] for e in raw["traceEvents"] if e.get("ph") == "X"}
    assert not any("at::native" in n or n.startswith("triton_") for n in names)
    trace_id = ingest(LLAMA, LLAMA.name)
    findings = client.get(f"/api/v1/traces/{trace_id}/findings").json()["items"]
    assert "low_fusion" in {x["rule"] for x in findings}
    assert all("torch.compile" not in x["text"] for x in findings)
