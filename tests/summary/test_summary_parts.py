"""Steps, launch delay, launching CPU ops, memory, transfers, collectives and fusion, by hand."""

from __future__ import annotations

from ingest.events import Event, EventKind
from tests.summary.helpers import annotation, copy, kernel, memory, op, runtime, summarize


def test_steps_cpu_and_gpu_times_with_nested_annotations() -> None:
    # Step 1: CPU [0,100). It launches kernel x (runtime at 10) running [50,90) and, under a
    # nested annotation, kernel y (runtime at 60) running [120,170). Its GPU mirror covers
    # only the work launched directly under it: [49,92). GPU step time = 170 - 49 = 121.
    # Step 2: CPU [100,180); one kernel launched at 150 runs [200,230): GPU time 30.
    events = [
        annotation("ProfilerStep#1", 0, 100),
        annotation("ProfilerStep#1", 49, 43, gpu=True),
        annotation("ProfilerStep#2", 100, 80),
        runtime("cudaLaunchKernel", 10, 5, corr=1),
        runtime("cudaLaunchKernel", 60, 5, corr=2),
        runtime("cudaLaunchKernel", 150, 5, corr=3),
        kernel("x", 50, 40, corr=1),
        kernel("y", 120, 50, corr=2),
        kernel("z", 200, 30, corr=3),
    ]
    steps = summarize(events)[0]["steps"]
    assert [(s["step"], s["cpu_ns"], s["gpu_ns"]) for s in steps["steps"]] == [
        (1, 100, 121),
        (2, 80, 30),
    ]
    assert steps["cpu"] == {
        "count": 2, "mean_ns": 90, "min_ns": 80, "p50_ns": 90, "p95_ns": 100, "max_ns": 100
    }  # fmt: skip
    assert steps["gpu"]["max_ns"] == 121


def test_launch_delay_and_the_launching_cpu_op() -> None:
    # Thread 1: aten::linear [0,100) > aten::addmm [10,60) > cudaLaunchKernel [20,25) corr 7;
    # aten::linear > cudaLaunchKernel [70,72) corr 8 (directly under linear).
    # Thread 2: aten::mul [0,50) > cudaLaunchKernel [5,6) corr 9. Kernel 10 has no runtime.
    events = [
        op("aten::linear", 0, 100),
        op("aten::addmm", 10, 50),
        runtime("cudaLaunchKernel", 20, 5, corr=7),
        runtime("cudaLaunchKernel", 70, 2, corr=8),
        op("aten::mul", 0, 50, tid=2),
        runtime("cudaLaunchKernel", 5, 1, corr=9, tid=2),
        kernel("gemm", 120, 10, corr=7),
        kernel("bias", 130, 10, corr=8),
        kernel("mul", 12, 3, corr=9),
        kernel("orphan", 200, 1, corr=10),
    ]
    summary, builder = summarize(events)
    launch = summary["launch"]
    assert (launch["matched"], launch["unmatched"]) == (3, 1)
    # delays: 120-20 = 100, 130-70 = 60, 12-5 = 7
    assert launch["delay"] == {
        "count": 3, "mean_ns": 55, "min_ns": 7, "p50_ns": 60, "p95_ns": 100, "max_ns": 100
    }  # fmt: skip
    by_op = {
        g.key: (g.count, g.total_ns) for g in builder.kernel_groups() if g.group_by == "cpu_op"
    }
    assert by_op == {"aten::addmm": (1, 10), "aten::linear": (1, 10), "aten::mul": (1, 3)}


def test_memory_peaks_series_and_phases() -> None:
    # allocated: 10 @0, 50 @20 (forward), 30 @40, 80 @70 (backward), 20 @95 (optimizer)
    events = [
        annotation("## forward ##", 10, 30),
        op("autograd::engine::evaluate_function: MmBackward0", 60, 20, tid=3),
        annotation("Optimizer.step#AdamW.step", 90, 10),
        memory(0, 10, 100),
        memory(20, 50, 100),
        memory(40, 30, 120),
        memory(70, 80, 120),
        memory(95, 20, 120),
        memory(96, 999, 999, device=-1),  # host memory: ignored
    ]
    summary = summarize(events)[0]
    (device,) = summary["memory"]
    assert (device["peak_allocated_bytes"], device["peak_allocated_ts_ns"]) == (80, 70)
    assert (device["peak_reserved_bytes"], device["peak_reserved_ts_ns"]) == (120, 40)
    assert device["samples"] == 5
    assert device["series"]["allocated_bytes"] == [10, 50, 30, 80, 20]
    phases = {
        p["phase"]: (p["duration_ns"], p["peak_allocated_bytes"]) for p in summary["memory_phases"]
    }
    # forward [10,40): 10 held on entry, 50 at 20 -> 50; the sample at 40 is outside.
    # backward [60,80): 30 held on entry, 80 at 70 -> 80. optimizer [90,100): 80 on entry.
    assert phases == {"forward": (30, 50), "backward": (20, 80), "optimizer": (10, 80)}


def test_transfers_pinned_and_pageable_shares() -> None:
    events = [
        copy("Memcpy HtoD (Pageable -> Device)", 0, 10, nbytes=300),
        copy("Memcpy HtoD (Pinned -> Device)", 10, 10, nbytes=700),
        copy("Memcpy DtoH (Device -> Pinned)", 20, 5, nbytes=1000),
        copy("Memcpy DtoD (Device -> Device)", 30, 5, nbytes=50),
        copy("Memset (Device)", 40, 1, nbytes=8),
    ]
    transfers = summarize(events)[0]["transfers"]
    assert (transfers["h2d_bytes"], transfers["d2h_bytes"], transfers["d2d_bytes"]) == (
        1000, 1000, 50
    )  # fmt: skip
    assert (transfers["pinned_bytes"], transfers["pageable_bytes"]) == (1700, 300)
    assert transfers["pageable_pct"] == 15.0 and transfers["h2d_pageable_pct"] == 30.0
    top = transfers["kinds"][0]
    assert (top["kind"], top["src"], top["bytes"], top["bandwidth_gbps"]) == (
        "DtoH",
        "Device",
        1000,
        200.0,
    )


def test_collectives_from_metadata_and_from_names() -> None:
    meta = {
        "Collective name": "allreduce",
        "In msg nelems": 1000,
        "dtype": "Float",
        "Group size": 2,
    }
    events = [
        kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 0, 10, args=meta),
        kernel(
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 20, 30, args={**meta, "In msg nelems": 10}
        ),
        kernel("ncclKernel_Broadcast_RING_LL_Sum_int8_t", 60, 5),
        kernel("gemm", 0, 100),
    ]
    comm = summarize(events)[0]["communication"]
    assert (comm["kernels"], comm["total_ns"]) == (3, 45)
    allreduce, broadcast = comm["collectives"]
    assert allreduce == {
        "collective": "allreduce", "count": 2, "total_ns": 40, "bytes": 4040,
        "max_msg_bytes": 4000, "max_in_msg_nelems": 1000, "group_sizes": [2], "dtypes": ["Float"],
    }  # fmt: skip
    assert (broadcast["collective"], broadcast["bytes"]) == ("broadcast", None)


def test_fusion_share_by_naming_rule() -> None:
    events = [
        kernel("triton_poi_fused_add_gelu_0", 0, 30),
        kernel("void pytorch_flash::flash_fwd_kernel<...>", 30, 20),
        kernel("void at::native::vectorized_elementwise_kernel<4>", 50, 50),
    ]
    fusion = summarize(events)[0]["fusion"]
    assert (fusion["fused_ns"], fusion["kernel_ns"], fusion["fused_pct"]) == (50, 100, 50.0)
    assert fusion["by_pattern"] == {"triton_": 30, "flash": 20}


def test_kernel_stats_percentiles_launch_args_and_groups() -> None:
    args = {"grid": [8, 1, 1], "block": [128, 1, 1], "registers per thread": 32,
            "shared memory": 1024, "est. achieved occupancy %": 50}  # fmt: skip
    durations = [5, 1, 4, 2, 3, 10, 6, 7, 9, 8]
    events: list[Event] = [
        kernel("k", 100 * i, d, args=args, stream=7 if i % 2 else 9)
        for i, d in enumerate(durations)
    ]
    events.append(Event(EventKind.PYTHON, "f", 0, 1))
    _, builder = summarize(events)
    (stat,) = builder.stats.kernels()
    assert (stat.count, stat.total_ns, stat.mean_ns, stat.min_ns, stat.max_ns) == (10, 55, 5, 1, 10)
    assert (stat.p50_ns, stat.p95_ns, stat.pct) == (5, 10, 100.0)
    assert (stat.grid, stat.block, stat.registers_per_thread) == ([8, 1, 1], [128, 1, 1], 32)
    assert (stat.shared_memory_bytes, stat.occupancy_pct, stat.category) == (1024, 50, "compute")
    streams = {
        g.stream: (g.count, g.total_ns, g.p50_ns)
        for g in builder.kernel_groups()
        if g.group_by == "stream"
    }
    # stream 9 gets i = 0,2,4,6,8 -> 5,4,3,6,9; stream 7 gets 1,2,10,7,8
    assert streams == {9: (5, 27, 5), 7: (5, 28, 7)}
    assert builder.stats.counts == {"kernel": 10, "python": 1}


def test_ranks_keep_their_devices_and_correlation_ids_apart() -> None:
    # Two ranks, both on device 0, reuse correlation id 1: each kernel must join the runtime
    # call of its own rank (delays 10 and 30), and the devices must stay separate.
    def ranked(event: Event, rank: int) -> Event:
        event.rank = rank
        return event

    events = [
        ranked(runtime("cudaLaunchKernel", 0, 5, corr=1), 0),
        ranked(runtime("cudaLaunchKernel", 100, 5, corr=1, tid=2), 1),
        ranked(kernel("gemm", 10, 50, corr=1), 0),
        ranked(kernel("gemm", 130, 20, corr=1), 1),
    ]
    summary, builder = summarize(events)
    assert [(d["rank"], d["device"], d["kernels"]) for d in summary["devices"]] == [
        (0, 0, 1),
        (1, 0, 1),
    ]
    assert summary["launch"]["delay"]["min_ns"] == 10
    assert summary["launch"]["delay"]["max_ns"] == 30
    ranks = {g.rank: g.total_ns for g in builder.kernel_groups() if g.group_by == "rank"}
    assert ranks == {0: 50, 1: 20}
