"""GPU busy/idle, the split by category and the overlaps, on traces built by hand.

Each case draws its intervals on one device and states the answer as arithmetic on them.
"""

from __future__ import annotations

from tests.summary.helpers import copy, kernel, op, runtime, summarize

NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def test_communication_overlapping_compute_on_another_stream() -> None:
    # compute [0,100) and [150,250) on stream 7; all-reduce [50,200) on stream 20.
    events = [
        kernel("gemm", 0, 100),
        kernel("gemm", 150, 100),
        kernel(NCCL, 50, 150, stream=20),
    ]
    time = summarize(events)[0]["devices"][0]["time"]
    assert time["span_ns"] == 250
    assert time["busy_ns"] == 250 and time["idle_ns"] == 0
    assert time["compute_ns"] == 200
    assert time["communication_ns"] == 150
    # overlap: [50,100) + [150,200) = 100 of 150 ns of communication
    assert time["comm_compute_overlap_ns"] == 100
    assert time["comm_compute_overlap_pct"] == round(100 * 100 / 150, 3)
    # exclusive: communication alone only in [100,150)
    assert time["exclusive"] == {
        "compute_ns": 200,
        "communication_ns": 50,
        "memcpy_ns": 0,
        "memset_ns": 0,
        "idle_ns": 0,
    }


def test_no_overlap_is_zero_and_no_communication_is_none() -> None:
    serial = summarize([kernel("gemm", 0, 100), kernel(NCCL, 100, 50, stream=20)])[0]
    assert serial["devices"][0]["time"]["comm_compute_overlap_pct"] == 0.0
    compute_only = summarize([kernel("gemm", 0, 100)])[0]
    assert compute_only["devices"][0]["time"]["comm_compute_overlap_pct"] is None


def test_idle_copies_memsets_and_copy_overlap() -> None:
    # kernel [0,100); H2D copy [80,180) on stream 9; memset [300,310); D2D copy [305,320).
    # GPU span [0,320): busy = [0,180) + [300,320) = 200, idle 120.
    events = [
        kernel("gemm", 0, 100),
        copy("Memcpy HtoD (Pinned -> Device)", 80, 100, nbytes=4096, stream=9),
        copy("Memset (Device)", 300, 10, nbytes=64),
        copy("Memcpy DtoD (Device -> Device)", 305, 15, nbytes=128, stream=9),
    ]
    summary = summarize(events)[0]
    time = summary["devices"][0]["time"]
    assert (time["span_ns"], time["busy_ns"], time["idle_ns"]) == (320, 200, 120)
    assert time["idle_pct"] == 37.5 and time["busy_pct"] == 62.5
    assert time["memcpy_ns"] == 100 + 15
    assert time["copy_host_ns"] == 100
    assert time["memset_ns"] == 10
    assert time["copy_compute_overlap_ns"] == 20  # [80,100)
    assert time["copy_compute_overlap_pct"] == 20.0
    ex = time["exclusive"]
    assert (
        ex["compute_ns"]
        + ex["communication_ns"]
        + ex["memcpy_ns"]
        + ex["memset_ns"]
        + ex["idle_ns"]
        == time["span_ns"]
    )
    assert (ex["memcpy_ns"], ex["memset_ns"]) == (80 + 15, 5)  # [100,180)+[305,320); [300,305)
    assert summary["devices"][0]["streams"] == [7, 9]
    assert summary["gpu"]["time"] == time  # one device: the trace total is that device


def test_devices_share_the_trace_gpu_span_and_add_up() -> None:
    events = [kernel("a", 0, 100, device=0), kernel("b", 50, 100, device=1)]
    summary = summarize(events)[0]
    spans = [(d["device"], d["time"]["busy_ns"], d["time"]["idle_ns"]) for d in summary["devices"]]
    assert spans == [(0, 100, 50), (1, 100, 50)]  # span [0,150) on both
    gpu = summary["gpu"]["time"]
    assert (gpu["span_ns"], gpu["busy_ns"], gpu["idle_pct"]) == (300, 200, round(100 / 3, 3))
    assert summary["gpu"]["devices"] == 2


def test_longest_gaps_carry_the_cpu_op_and_runtime_running_when_they_began() -> None:
    # GPU: [0,100), [400,500), [520,600). Gaps: [100,400) = 300, [500,520) = 20.
    # CPU thread 1: aten::item [90,420) > cudaStreamSynchronize [95,399); thread 2 idle.
    events = [
        op("aten::item", 90, 330),
        op("aten::_local_scalar_dense", 92, 320),
        runtime("cudaStreamSynchronize", 95, 304),
        op("aten::mm", 500, 30, tid=2),
        kernel("a", 0, 100),
        kernel("b", 400, 100),
        kernel("c", 520, 80),
    ]
    gaps = summarize(events)[0]["idle_gaps"]
    assert [(g["start_ns"], g["dur_ns"]) for g in gaps] == [(100, 300), (500, 20)]
    first, second = gaps
    assert first["cpu_op"] == "aten::_local_scalar_dense"  # innermost op at t=100
    assert first["runtime"] == "cudaStreamSynchronize"
    assert first["host_sync"] is True
    assert (second["cpu_op"], second["runtime"], second["host_sync"]) == ("aten::mm", None, False)


def test_empty_trace_has_no_devices_and_no_figures() -> None:
    summary = summarize([op("aten::add", 0, 10)])[0]
    assert summary["devices"] == [] and summary["idle_gaps"] == []
    assert summary["gpu"]["time"]["span_ns"] == 0
    assert summary["gpu"]["time"]["comm_compute_overlap_pct"] is None
    assert summary["launch"]["delay"] is None
    assert summary["steps"] == {
        "steps": [],
        "cpu": None,
        "gpu": None,
        "marker": None,
        "marker_source": None,
    }
    assert summary["fusion"]["fused_pct"] is None
