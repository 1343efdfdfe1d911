"""Each finding rule on constructed summaries, on both sides of its threshold."""

from __future__ import annotations

from typing import Any

import pytest

from backend.models.analyses import MemorySeries
from backend.services.analysis import findings as f
from backend.services.analysis.findings import derive_findings


def _time(**kw: Any) -> dict[str, Any]:
    base = {"span_ns": 1_000_000, "idle_pct": 5.0, "comm_compute_overlap_pct": None,
            "copy_compute_overlap_pct": None, "exclusive": {"memcpy_ns": 0}}  # fmt: skip
    return base | kw


def _summary(**parts: Any) -> dict[str, Any]:
    return {"version": 1, "gpu": {"kernels": 10, "time": _time()}} | parts


def _rules(summary: dict[str, Any], **kw: Any) -> dict[str, f.Finding]:
    return {x.rule: x for x in derive_findings(summary, **kw)}


def test_gpu_idle_names_the_longest_gap_and_its_host_sync() -> None:
    gaps = [
        {"dur_ns": 5_000, "cpu_op": "aten::copy_", "runtime": None, "host_sync": False},
        {"dur_ns": 222_000, "cpu_op": "aten::item", "runtime": "cudaStreamSynchronize",
         "host_sync": True},
    ]  # fmt: skip
    found = _rules(_summary(gpu={"kernels": 10, "time": _time(idle_pct=38.04)}, idle_gaps=gaps))
    assert found["gpu_idle"].text == (
        "GPU idle 38.0% of its active span; the longest gap (222 µs) follows aten::item (host sync)"
    )
    assert found["gpu_idle"].value == 38.04


def test_gpu_idle_below_threshold_is_not_a_finding() -> None:
    below = _summary(gpu={"kernels": 10, "time": _time(idle_pct=f.IDLE_PCT - 0.1)})
    assert "gpu_idle" not in _rules(below)


@pytest.mark.parametrize(("pct", "fires"), [(12.0, True), (0.5, False), (None, False)])
def test_pageable_h2d(pct: float | None, fires: bool) -> None:
    found = _rules(_summary(transfers={"h2d_pageable_pct": pct}))
    assert ("pageable_h2d" in found) is fires
    if fires:
        assert found["pageable_h2d"].text.startswith("12% of H2D bytes come from pageable memory")


@pytest.mark.parametrize(("pct", "fires"), [(0.0, True), (29.9, True), (30.0, False)])
def test_comm_overlap(pct: float, fires: bool) -> None:
    summary = _summary(
        gpu={"kernels": 10, "time": _time(comm_compute_overlap_pct=pct)},
        communication={"collectives": [{"collective": "allreduce"}]},
    )
    found = _rules(summary)
    assert ("comm_overlap" in found) is fires
    if pct == 0.0:
        assert found["comm_overlap"].text == (
            "Compute kernels ran during only 0% of NCCL allreduce time: 0% overlap"
        )


def test_copy_share_reports_the_overlap_too() -> None:
    time = _time(exclusive={"memcpy_ns": 260_000}, copy_compute_overlap_pct=0.0)
    found = _rules(_summary(gpu={"kernels": 10, "time": time}))
    assert found["copy_share"].value == pytest.approx(26.0)
    assert found["copy_share"].text.endswith("; 0% of copy time overlapped compute")
    small = _time(exclusive={"memcpy_ns": 99_000})
    assert "copy_share" not in _rules(_summary(gpu={"kernels": 10, "time": small}))


def test_dominant_kernel_uses_the_kernel_stats() -> None:
    found = _rules(_summary(), top_kernels=[("nvjet_gemm", 45.0)])
    assert found["dominant_kernel"].text == "One kernel takes 45% of GPU kernel time: nvjet_gemm"
    assert "dominant_kernel" not in _rules(_summary(), top_kernels=[("k", 29.0)])


@pytest.mark.parametrize(("pct", "kernels", "fires"), [(3.7, 1065, True), (3.7, 50, False),
                                                       (12.0, 1065, False)])  # fmt: skip
def test_low_fusion(pct: float, kernels: int, fires: bool) -> None:
    summary = _summary(gpu={"kernels": kernels, "time": _time()}, fusion={"fused_pct": pct})
    assert ("low_fusion" in _rules(summary)) is fires


def test_torch_compile_advice_only_for_pytorch_traces() -> None:
    summary = _summary(gpu={"kernels": 1963, "time": _time()}, fusion={"fused_pct": 2.0})
    other = _rules(summary)["low_fusion"].text  # e.g. llama.cpp through rocprof
    torch = _rules(summary, facts=f.Facts(pytorch=True))["low_fusion"].text
    assert "torch.compile" not in other and other.startswith("Only 2% of GPU kernel time")
    assert "torch.compile" in torch


def test_step_spread() -> None:
    steps = {"cpu": {"p50_ns": 10_000_000, "p95_ns": 13_000_000}}
    assert _rules(_summary(steps=steps))["step_spread"].value == pytest.approx(30.0)
    steady = {"cpu": {"p50_ns": 10_000_000, "p95_ns": 11_000_000}}
    assert "step_spread" not in _rules(_summary(steps=steady))


def test_launch_bound_needs_idle_gpu_and_short_delays() -> None:
    idle = {"kernels": 10, "time": _time(idle_pct=80.0)}
    fast = _summary(gpu=idle, launch={"delay": {"p50_ns": 7_000}})
    slow = _summary(gpu=idle, launch={"delay": {"p50_ns": 500_000}})
    assert "launch_bound" in _rules(fast)
    assert "launch_bound" not in _rules(slow)


def _memory(frag: float | None) -> MemorySeries:
    return MemorySeries(
        device=0,
        t_ns=[0],
        allocated=[1],
        reserved=[2],
        peak_allocated=1,
        peak_allocated_t_ns=0,
        peak_reserved=2,
        peak_reserved_t_ns=0,
        fragmentation_at_peak_pct=frag,
        fragmentation_max_pct=frag,
        samples=1,
    )


def test_fragmentation() -> None:
    found = _rules(_summary(), memory=[_memory(10.0), _memory(45.0)])
    assert found["fragmentation"].value == 45.0
    assert "fragmentation" not in _rules(_summary(), memory=[_memory(29.0), _memory(None)])


def test_a_summary_from_before_summaries_existed_gives_no_findings_and_no_error() -> None:
    assert derive_findings({"events": 12}) == []
    assert derive_findings(None) == []


def test_warnings_come_first() -> None:
    summary = _summary(gpu={"kernels": 10, "time": _time(idle_pct=50.0)})
    found = derive_findings(summary, top_kernels=[("k", 90.0)])
    assert [x.severity for x in found] == ["warning", "info"]
