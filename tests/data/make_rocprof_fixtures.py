"""Write the small AMD rocprof fixtures under tests/data/rocprof/ (deterministic output).

There is no AMD GPU here, so these files are built from the formats' documentation
(FORMATS.md §4: column sets of rocprof v1, rocprofv2, rocprofv3 2024/2025, the rocprofv3 JSON
layout, the rocpd schema-3 tables and views, rocprof-compute's workload files). One synthetic
run: a HIP program on one MI300X (agent 1 behind CPU agent 0) launching three kernels on two
queues, an RCCL all-reduce, copies, allocations and roctx ranges; times are CLOCK_BOOTTIME ns.

Run: python tests/data/make_rocprof_fixtures.py
"""
# ruff: noqa: E501  (tables of fixture rows read better one row per line)

from __future__ import annotations

import csv
import gzip
import io
import json
import shutil
import sqlite3
import tarfile
import zipfile
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent / "rocprof"
PID, TID = 4242, 4243
T0 = 64_000_000_000_000  # ~17.8 h after boot
GPU = "AMD Instinct MI300X"
# (dispatch id, kernel name, queue, start offset ns, duration ns, grid work-items x, workgroup x)
KERNELS = [
    (1, "void vector_add<float>(float*, float const*, float const*, int)", 1, 1_000, 12_000, 1_048_576, 256),
    (2, "gemm_bf16_tn(__hip_bfloat16 const*, __hip_bfloat16 const*, float*)", 1, 20_000, 90_000, 65_536, 256),
    (3, "void vector_add<float>(float*, float const*, float const*, int)", 2, 30_000, 11_000, 1_048_576, 256),
    (4, "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", 2, 120_000, 40_000, 256, 256),
    (5, "gemm_bf16_tn(__hip_bfloat16 const*, __hip_bfloat16 const*, float*)", 1, 170_000, 88_000, 65_536, 256),
]  # fmt: skip


def _csv(path: Path, header: list[Any], rows: list[list[Any]], *, quote: bool = True) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.StringIO()
    writer = csv.writer(buf, quoting=csv.QUOTE_NONNUMERIC if quote else csv.QUOTE_MINIMAL)
    writer.writerow(header)
    writer.writerows(rows)
    path.write_text(buf.getvalue())


def v3_csv_run(folder: Path, prefix: str = str(PID)) -> None:
    """The 2025 rocprofv3 CSV set of one run (``-d host1/%pid% -o %pid%``)."""
    p = folder / prefix
    _csv(
        p.with_name(f"{prefix}_agent_info.csv"),
        [
            "Node_Id",
            "Logical_Node_Id",
            "Agent_Type",
            "Cpu_Cores_Count",
            "Simd_Count",
            "Wave_Front_Size",
            "Cu_Count",
            "Simd_Per_Cu",
            "Max_Engine_Clk_Fcompute",
            "Gpu_Id",
            "Name",
            "Vendor_Name",
            "Product_Name",
            "Model_Name",
        ],
        [
            [0, 0, "CPU", 96, 0, 0, 0, 0, 0, 0, "CPU", "CPU", "AMD EPYC 9654", ""],
            [1, 1, "GPU", 0, 1216, 64, 304, 4, 2100, 28851, "gfx942", "AMD", GPU, "aqua_vanjaram"],
        ],
    )
    _csv(
        p.with_name(f"{prefix}_kernel_trace.csv"),
        [
            "Kind",
            "Agent_Id",
            "Queue_Id",
            "Stream_Id",
            "Thread_Id",
            "Dispatch_Id",
            "Kernel_Id",
            "Kernel_Name",
            "Correlation_Id",
            "Start_Timestamp",
            "End_Timestamp",
            "LDS_Block_Size",
            "Scratch_Size",
            "VGPR_Count",
            "Accum_VGPR_Count",
            "SGPR_Count",
            "Workgroup_Size_X",
            "Workgroup_Size_Y",
            "Workgroup_Size_Z",
            "Grid_Size_X",
            "Grid_Size_Y",
            "Grid_Size_Z",
        ],
        [
            [
                "KERNEL_DISPATCH",
                "Agent 1",
                q,
                q,
                TID,
                d,
                10 + d % 3,
                name,
                100 + d,
                T0 + s,
                T0 + s + dur,
                0,
                0,
                16,
                0,
                24,
                wg,
                1,
                1,
                grid,
                1,
                1,
            ]
            for d, name, q, s, dur, grid, wg in KERNELS
        ],
    )
    _csv(p.with_name(f"{prefix}_memory_copy_trace.csv"),
         ["Kind", "Direction", "Stream_Id", "Source_Agent_Id", "Destination_Agent_Id",
          "Correlation_Id", "Start_Timestamp", "End_Timestamp"],
         [["MEMORY_COPY", "MEMORY_COPY_HOST_TO_DEVICE", 1, "Agent 0", "Agent 1", 90, T0 - 50_000, T0 - 10_000],
          ["MEMORY_COPY", "MEMORY_COPY_DEVICE_TO_HOST", 1, "Agent 1", "Agent 0", 200, T0 + 300_000, T0 + 340_000]])  # fmt: skip
    _csv(p.with_name(f"{prefix}_memory_allocation_trace.csv"),
         ["Kind", "Operation", "Agent_Id", "Allocation_Size", "Address", "Correlation_Id",
          "Start_Timestamp", "End_Timestamp"],
         [["MEMORY_ALLOCATION", "MEMORY_ALLOCATION_ALLOCATE", "Agent 1", 4194304, "0x00007f0000000000", 80, T0 - 90_000, T0 - 85_000],
          ["MEMORY_ALLOCATION", "MEMORY_ALLOCATION_FREE", "", 0, "0x00007f0000000000", 210, T0 + 350_000, T0 + 352_000]])  # fmt: skip
    api = ["Domain", "Function", "Process_Id", "Thread_Id", "Correlation_Id", "Start_Timestamp", "End_Timestamp"]  # fmt: skip
    _csv(
        p.with_name(f"{prefix}_hip_api_trace.csv"),
        api,
        [["HIP_RUNTIME_API", "hipMemcpyAsync", PID, TID, 90, T0 - 60_000, T0 - 55_000]]
        + [
            ["HIP_RUNTIME_API", "hipLaunchKernel", PID, TID, 100 + d, T0 + s - 900, T0 + s - 400]
            for d, _, _, s, _, _, _ in KERNELS
        ],
    )
    _csv(
        p.with_name(f"{prefix}_hsa_api_trace.csv"),
        api,
        [["HSA_CORE_API", "hsa_signal_wait_scacquire", PID, TID, 300, T0 + 260_000, T0 + 290_000]],
    )
    _csv(
        p.with_name(f"{prefix}_marker_api_trace.csv"),
        api,
        [
            ["MARKER_CORE_API", "forward", PID, TID, 301, T0 - 1_000, T0 + 160_000],
            ["MARKER_CORE_API", "step 1 done", PID, TID, 302, T0 + 161_000, T0 + 161_000],
        ],
    )
    _csv(
        p.with_name(f"{prefix}_rccl_api_trace.csv"),
        api,
        [
            ["RCCL_API", "ncclCommInitAll", PID, TID, 50, T0 - 200_000, T0 - 150_000],
            ["RCCL_API", "ncclAllReduce", PID, TID, 104, T0 + 119_000, T0 + 119_600],
        ],
    )
    totals: dict[str, list[int]] = {}
    for _, name, _, _, dur, _, _ in KERNELS:
        agg = totals.setdefault(name, [0, 0, dur, dur])
        agg[0] += 1
        agg[1] += dur
        agg[2], agg[3] = min(agg[2], dur), max(agg[3], dur)
    grand = sum(t[1] for t in totals.values())
    _csv(
        p.with_name(f"{prefix}_kernel_stats.csv"),
        ["Name", "Calls", "TotalDurationNs", "AverageNs", "Percentage", "MinNs", "MaxNs", "StdDev"],
        [
            [n, c, t, t / c, 100 * t / grand, lo, hi, 0.0]
            for n, (c, t, lo, hi) in sorted(totals.items(), key=lambda kv: -kv[1][1])
        ],
    )
    _csv(
        p.with_name(f"{prefix}_counter_collection.csv"),
        [
            "Correlation_Id",
            "Dispatch_Id",
            "Agent_Id",
            "Queue_Id",
            "Process_Id",
            "Thread_Id",
            "Grid_Size",
            "Kernel_Id",
            "Kernel_Name",
            "Workgroup_Size",
            "LDS_Block_Size",
            "Scratch_Size",
            "VGPR_Count",
            "Accum_VGPR_Count",
            "SGPR_Count",
            "Counter_Name",
            "Counter_Value",
            "Start_Timestamp",
            "End_Timestamp",
        ],
        [
            [
                100 + d,
                d,
                "Agent 1",
                q,
                PID,
                TID,
                grid,
                10 + d % 3,
                name,
                wg,
                0,
                0,
                16,
                0,
                24,
                "SQ_WAVES",
                float(grid // 64),
                T0 + s,
                T0 + s + dur,
            ]
            for d, name, q, s, dur, grid, wg in KERNELS[:2]
        ],
    )


def v3_old_kernel_trace(path: Path) -> None:
    """The Oct-2024 (SDK 0.5) kernel_trace columns: integer agents, segment sizes, no stream."""
    _csv(
        path,
        [
            "Kind",
            "Agent_Id",
            "Queue_Id",
            "Thread_Id",
            "Dispatch_Id",
            "Kernel_Id",
            "Kernel_Name",
            "Correlation_Id",
            "Start_Timestamp",
            "End_Timestamp",
            "Private_Segment_Size",
            "Group_Segment_Size",
            "Workgroup_Size_X",
            "Workgroup_Size_Y",
            "Workgroup_Size_Z",
            "Grid_Size_X",
            "Grid_Size_Y",
            "Grid_Size_Z",
        ],
        [
            [
                "KERNEL_DISPATCH",
                1,
                q,
                TID,
                d,
                10 + d % 3,
                name,
                100 + d,
                T0 + s,
                T0 + s + dur,
                0,
                1024,
                wg,
                1,
                1,
                grid,
                1,
                1,
            ]
            for d, name, q, s, dur, grid, wg in KERNELS
        ],
    )


def v3_json(path: Path) -> None:
    """rocprofv3 ``--output-format json``: names by index, agents by opaque handle."""
    kinds = [{"kind": "NONE", "operations": []},
             {"kind": "HIP_RUNTIME_API", "operations": ["hipMemcpyAsync", "hipLaunchKernel"]},
             {"kind": "KERNEL_DISPATCH", "operations": ["KERNEL_DISPATCH_COMPLETE"]},
             {"kind": "MEMORY_COPY", "operations": ["MEMORY_COPY_NONE", "MEMORY_COPY_HOST_TO_DEVICE", "MEMORY_COPY_DEVICE_TO_HOST"]},
             {"kind": "MARKER_CORE_API", "operations": ["roctxMarkA", "roctxRangePushA"]},
             {"kind": "RCCL_API", "operations": ["ncclCommInitAll", "ncclAllReduce"]}]  # fmt: skip
    names = sorted({k[1] for k in KERNELS})
    tool = {
        "metadata": {"pid": PID, "init_time": T0 - 10**9, "fini_time": T0 + 10**9},
        "agents": [{"id": {"handle": 9001}, "type": 1, "logical_node_id": 0, "name": "CPU"},
                   {"id": {"handle": 9002}, "type": 2, "logical_node_id": 1, "name": "gfx942",
                    "product_name": GPU, "cu_count": 304}],
        "strings": {"buffer_records": kinds, "marker_api": [{"key": 301, "value": "forward"}]},
        "kernel_symbols": [{"kernel_id": i + 1, "kernel_name": n + ".kd", "formatted_kernel_name": n,
                            "sgpr_count": 24, "arch_vgpr_count": 16, "accum_vgpr_count": 0}
                           for i, n in enumerate(names)],
        "buffer_records": {
            "kernel_dispatch": [
                {"kind": 2, "operation": 0, "thread_id": TID,
                 "correlation_id": {"internal": 100 + d, "external": 0},
                 "start_timestamp": T0 + s, "end_timestamp": T0 + s + dur,
                 "stream_id": {"handle": q},
                 "dispatch_info": {"agent_id": {"handle": 9002}, "queue_id": {"handle": q},
                                   "kernel_id": names.index(name) + 1, "dispatch_id": d,
                                   "private_segment_size": 0, "group_segment_size": 0,
                                   "workgroup_size": {"x": wg, "y": 1, "z": 1},
                                   "grid_size": {"x": grid, "y": 1, "z": 1}}}
                for d, name, q, s, dur, grid, wg in KERNELS],
            "memory_copy": [{"kind": 3, "operation": 1, "thread_id": TID,
                             "correlation_id": {"internal": 90, "external": 0},
                             "start_timestamp": T0 - 50_000, "end_timestamp": T0 - 10_000,
                             "src_agent_id": {"handle": 9001}, "dst_agent_id": {"handle": 9002},
                             "bytes": 4194304}],
            "hip_api": [{"kind": 1, "operation": 1, "thread_id": TID,
                         "correlation_id": {"internal": 100 + d, "external": 0},
                         "start_timestamp": T0 + s - 900, "end_timestamp": T0 + s - 400}
                        for d, _, _, s, _, _, _ in KERNELS],
            "marker_api": [{"kind": 4, "operation": 1, "thread_id": TID,
                            "correlation_id": {"internal": 301, "external": 0},
                            "start_timestamp": T0 - 1_000, "end_timestamp": T0 + 160_000}],
            "rccl_api": [{"kind": 5, "operation": 1, "thread_id": TID,
                          "correlation_id": {"internal": 104, "external": 0},
                          "start_timestamp": T0 + 119_000, "end_timestamp": T0 + 119_600}],
        },
    }  # fmt: skip
    path.write_text(json.dumps({"rocprofiler-sdk-tool": [tool]}, indent=1))


ROCPD_TABLES = {
    "rocpd_metadata": "id INTEGER PRIMARY KEY, tag TEXT, value TEXT",
    "rocpd_string": "id INTEGER PRIMARY KEY, guid TEXT, string TEXT",
    "rocpd_info_agent": "id INTEGER PRIMARY KEY, guid TEXT, nid INT, pid INT, type TEXT, absolute_index INT, logical_index INT, type_index INT, uuid INT, name TEXT, model_name TEXT, vendor_name TEXT, product_name TEXT",
    "rocpd_info_kernel_symbol": "id INTEGER PRIMARY KEY, guid TEXT, kernel_name TEXT, display_name TEXT, sgpr_count INT, arch_vgpr_count INT, accum_vgpr_count INT",
    "rocpd_track": "id INTEGER PRIMARY KEY, guid TEXT, nid INT, pid INT, tid INT, agent_id INT, queue_id INT, stream_id INT, name_id INT",
    "rocpd_timestamp": "id INTEGER PRIMARY KEY, guid TEXT, value BIGINT, phase INT, track_id INT",
    "rocpd_event": "id INTEGER PRIMARY KEY, guid TEXT, category_id INT, correlation_id INT",
    "rocpd_region": "id INTEGER PRIMARY KEY, guid TEXT, track_id INT, name_id INT, start_id INT, end_id INT, event_id INT",
    "rocpd_kernel_dispatch": "id INTEGER PRIMARY KEY, guid TEXT, track_id INT, kernel_id INT, dispatch_id INT, start_id INT, end_id INT, private_segment_size INT, group_segment_size INT, workgroup_size_x INT, workgroup_size_y INT, workgroup_size_z INT, grid_size_x INT, grid_size_y INT, grid_size_z INT, region_name_id INT, event_id INT",
    "rocpd_memory_copy": "id INTEGER PRIMARY KEY, guid TEXT, track_id INT, start_id INT, end_id INT, name_id INT, dst_agent_id INT, dst_address INT, src_agent_id INT, src_address INT, size INT, region_name_id INT, event_id INT",
    "rocpd_memory_allocate": "id INTEGER PRIMARY KEY, guid TEXT, track_id INT, type TEXT, level TEXT, start_id INT, end_id INT, name_id INT, address INT, size INT, region_name_id INT, event_id INT",
}  # fmt: skip


def rocpd(path: Path, schema_version: str = "3") -> None:
    """A rocpd database as rocprofv3 writes it: uuid-suffixed tables behind unsuffixed views."""
    path.unlink(missing_ok=True)
    uuid = "_0f1e2d3c_4b5a_6978_8796_a5b4c3d2e1f0"
    db = sqlite3.connect(path)
    for name, columns in ROCPD_TABLES.items():
        db.execute(f'CREATE TABLE "{name}{uuid}" ({columns})')
        db.execute(f'CREATE VIEW "{name}" AS SELECT * FROM "{name}{uuid}"')

    def ins(table: str, *row: Any) -> None:
        db.execute(f'INSERT INTO "{table}{uuid}" VALUES ({",".join("?" * len(row))})', row)

    for i, (tag, value) in enumerate(
        [("schema_version", schema_version), ("uuid", uuid), ("guid", "g")]
    ):
        ins("rocpd_metadata", i + 1, tag, value)
    strings = [
        "HIP_RUNTIME_API",
        "RCCL_API",
        "KERNEL_DISPATCH",
        "hipLaunchKernel",
        "ncclAllReduce",
        "MEMORY_COPY_HOST_TO_DEVICE",
        "MARKER_CORE_API",
        "forward",
    ]
    for i, text in enumerate(strings):
        ins("rocpd_string", i + 1, "g", text)
    sid = {text: i + 1 for i, text in enumerate(strings)}
    ins("rocpd_info_agent", 1, "g", 1, 1, "CPU", 0, 0, 0, 0, "CPU", "", "CPU", "AMD EPYC 9654")
    ins("rocpd_info_agent", 2, "g", 1, 1, "GPU", 1, 1, 0, 0, "gfx942", "aqua_vanjaram", "AMD", GPU)
    names = sorted({k[1] for k in KERNELS})
    for i, n in enumerate(names):
        ins("rocpd_info_kernel_symbol", i + 1, "g", n + ".kd", n, 24, 16, 0)
    ins("rocpd_track", 1, "g", 1, PID, TID, None, None, None, None)  # host thread
    for q in (1, 2):
        ins("rocpd_track", 1 + q, "g", 1, PID, TID, 2, q, q, None)  # GPU queue q
    ts = [0]

    def stamp(value: int, phase: int, track: int) -> int:
        ts[0] += 1
        ins("rocpd_timestamp", ts[0], "g", value, phase, track)
        return ts[0]

    eid = [0]

    def event(category: str, corr: int) -> int:
        eid[0] += 1
        ins("rocpd_event", eid[0], "g", sid[category], corr)
        return eid[0]

    for d, name, q, s, dur, grid, wg in KERNELS:
        e = event("KERNEL_DISPATCH", 100 + d)
        ins(
            "rocpd_kernel_dispatch",
            d,
            "g",
            1 + q,
            names.index(name) + 1,
            d,
            stamp(T0 + s, 1, 1 + q),
            stamp(T0 + s + dur, 2, 1 + q),
            0,
            0,
            wg,
            1,
            1,
            grid,
            1,
            1,
            None,
            e,
        )
        r = event("HIP_RUNTIME_API", 100 + d)
        ins(
            "rocpd_region",
            d,
            "g",
            1,
            sid["hipLaunchKernel"],
            stamp(T0 + s - 900, 1, 1),
            stamp(T0 + s - 400, 2, 1),
            r,
        )
    ins(
        "rocpd_region",
        10,
        "g",
        1,
        sid["ncclAllReduce"],
        stamp(T0 + 119_000, 1, 1),
        stamp(T0 + 119_600, 2, 1),
        event("RCCL_API", 104),
    )
    ins(
        "rocpd_region",
        11,
        "g",
        1,
        sid["forward"],
        stamp(T0 - 1_000, 1, 1),
        stamp(T0 + 160_000, 2, 1),
        event("MARKER_CORE_API", 301),
    )
    ins(
        "rocpd_memory_copy",
        1,
        "g",
        2,
        stamp(T0 - 50_000, 1, 2),
        stamp(T0 - 10_000, 2, 2),
        sid["MEMORY_COPY_HOST_TO_DEVICE"],
        2,
        0,
        1,
        0,
        4194304,
        None,
        event("KERNEL_DISPATCH", 90),
    )
    ins(
        "rocpd_memory_allocate",
        1,
        "g",
        2,
        "ALLOC",
        "REAL",
        stamp(T0 - 90_000, 1, 2),
        stamp(T0 - 85_000, 2, 2),
        sid["forward"],
        0x7F0000000000,
        4194304,
        None,
        event("KERNEL_DISPATCH", 80),
    )
    db.commit()
    db.execute("VACUUM")
    db.close()


V1_NEW = ["Index", "KernelName", "gpu-id", "queue-id", "queue-index", "pid", "tid", "grd", "wgr",
          "lds", "scr", "arch_vgpr", "accum_vgpr", "sgpr", "wave_size", "sig", "obj",
          "DispatchNs", "BeginNs", "EndNs", "CompleteNs", "DurationNs"]  # fmt: skip
V1_OLD = ["Index", "KernelName", "gpu-id", "queue-id", "queue-index", "pid", "tid", "grd", "wgr",
          "lds", "scr", "vgpr", "sgpr", "fbar", "sig", "obj"]  # fmt: skip


def _v1_rows(old: bool) -> list[list[Any]]:
    rows = []
    for i, (_, name, q, s, dur, grid, wg) in enumerate(KERNELS):
        kd = f"{name} [clone .kd]" if name.startswith("void") else f"{name}.kd"
        base = [i, kd, 0, q, 2 * i, PID, TID, grid, wg, 0, 0]
        times = [T0 + s - 500, T0 + s, T0 + s + dur, T0 + s + dur + 300]
        if old:
            rows.append([*base, 16, 24, 4160, "0x0", "0x7f00", 3 * (grid // 64), 7 * i, *times])
        else:
            rows.append([*base, 16, 0, 24, 64, "0x0", "0x7f00", *times, dur])
    return rows


def v1(folder: Path) -> None:
    """rocprof v1 --stats --hip-trace: results.csv, results.stats.csv, results.json."""
    _csv(folder / "results.csv", V1_NEW, _v1_rows(old=False))
    totals: dict[str, list[int]] = {}
    for row in _v1_rows(old=False):
        agg = totals.setdefault(row[1], [0, 0])
        agg[0] += 1
        agg[1] += row[-1]
    grand = sum(t for _, t in totals.values())
    _csv(folder / "results.stats.csv", ["Name", "Calls", "TotalDurationNs", "AverageNs", "Percentage"],
         [[n, c, t, t // c, 100 * t / grand] for n, (c, t) in sorted(totals.items(), key=lambda kv: -kv[1][1])])  # fmt: skip
    sections = ["Markers and Ranges", "COPY", "HIP", "HSA", "KFD", "OPS", "GPU0"]
    events: list[dict[str, Any]] = [{}] + [
        {"args": {"name": n}, "ph": "M", "pid": i, "name": "process_name", "sort_index": i}
        for i, n in enumerate(sections)
    ]
    for row in _v1_rows(old=False):
        args = {k: str(v) for k, v in zip(V1_NEW, row, strict=True) if k != "Index"}
        events.append(
            {
                "ph": "X",
                "name": row[1],
                "pid": 6,
                "tid": TID,
                "ts": str(row[18] // 1000),
                "dur": str(row[-1] // 1000),
                "args": args,
            }
        )
    for d, _, _, s, _, _, _ in KERNELS:
        events.append(
            {
                "ph": "X",
                "name": "hipLaunchKernel",
                "pid": 2,
                "tid": TID,
                "ts": str((T0 + s - 900) // 1000),
                "dur": "0",
                "args": {
                    "BeginNs": str(T0 + s - 900),
                    "EndNs": str(T0 + s - 400),
                    "pid": str(PID),
                    "Index": str(100 + d),
                },
            }
        )
    events.append(
        {
            "ph": "X",
            "name": "CopyHostToDevice",
            "pid": 1,
            "tid": 0,
            "ts": str((T0 - 50_000) // 1000),
            "dur": "40",
        }
    )
    other = {"CMD": "rocminfo", "Agent1.DeviceType": "CPU", "Agent1.Name": "CPU",
             "Agent2.DeviceType": "GPU", "Agent2.Name": "gfx942",
             "Agent2.MarketingName": GPU, "Agent2.ComputeUnit": "304",
             "Agent2.MaxClockFreq.(MHz)": "2100"}  # fmt: skip
    text = '{ "traceEvents":[' + "\n,".join(json.dumps(e) for e in events)
    (folder / "results.json").write_text(text + '\n],\n"otherData": ' + json.dumps(other) + "\n}\n")
    old_header = [*V1_OLD, "SQ_WAVES", "GRBM_COUNT", "DispatchNs", "BeginNs", "EndNs", "CompleteNs"]
    _csv(folder.parent / "v1_old_results.csv", old_header, _v1_rows(old=True), quote=False)


def v2(folder: Path) -> None:
    """rocprofv2 file plugin: kernel dispatches, HIP API and roctx CSVs."""
    _csv(folder / "results_kernel_trace.csv",
         ["Dispatch_ID", "GPU_ID", "Queue_ID", "PID", "TID", "Grid_Size", "Workgroup_Size",
          "LDS_Per_Workgroup", "Scratch_Per_Workitem", "Arch_VGPR", "Accum_VGPR", "SGPR",
          "Wave_Size", "Kernel_Name", "Start_Timestamp", "End_Timestamp", "Correlation_ID"],
         [[d, 0, q, PID, TID, grid, wg, 0, 0, 16, 0, 24, 64, name, T0 + s, T0 + s + dur, 100 + d]
          for d, name, q, s, dur, grid, wg in KERNELS], quote=False)  # fmt: skip
    _csv(folder / "results_hip_api_trace.csv",
         ["Domain", "Function", "Start_Timestamp", "End_Timestamp", "Correlation_ID"],
         [["HIP_API_DOMAIN", "hipLaunchKernel", T0 + s - 900, T0 + s - 400, 100 + d]
          for d, _, _, s, _, _, _ in KERNELS], quote=False)  # fmt: skip
    _csv(
        folder / "results_roctx_trace.csv",
        ["Domain", "ROCTX_ID", "Message", "Timestamp"],
        [["ROCTX_DOMAIN", 1, "forward", T0 - 1_000]],
        quote=False,
    )


def compute(folder: Path) -> None:
    """A rocprof-compute workload (``workloads/app/MI300X_A1``) with roofline counters."""
    counters = ["SQ_INSTS_VALU_ADD_F32", "SQ_INSTS_VALU_MUL_F32", "SQ_INSTS_VALU_FMA_F32",
                "SQ_INSTS_VALU_TRANS_F32", "SQ_INSTS_VALU_MFMA_MOPS_BF16", "TCC_EA0_RDREQ_sum",
                "TCC_EA0_RDREQ_32B_sum", "TCC_EA0_WRREQ_sum", "TCC_EA0_WRREQ_64B_sum", "TCC_BUBBLE_sum"]  # fmt: skip
    ident = ["Dispatch_ID", "Kernel_Name", "GPU_ID", "queue-id", "queue-index", "pid", "tid",
             "Grid_Size", "Workgroup_Size", "LDS_Per_Workgroup", "Scratch_Per_Workitem",
             "Arch_VGPR", "Accum_VGPR", "SGPR", "wave_size", "sig", "obj"]  # fmt: skip
    times = ["DispatchNs", "Start_Timestamp", "End_Timestamp", "CompleteNs"]
    rows, stamps = [], []
    for d, name, q, s, dur, grid, wg in KERNELS[:3]:
        base = [
            d,
            f"{name} [clone .kd]",
            0,
            q,
            d,
            PID,
            TID,
            grid,
            wg,
            0,
            0,
            16,
            0,
            24,
            64,
            "0x0",
            "0x7f00",
        ]
        t = [T0 + s - 500, T0 + s, T0 + s + dur, T0 + s + dur + 300]
        mfma = 1000 * d if "gemm" in name else 0
        rows.append(
            [*base, 4096 * d, 0, 8192 * d, 0, mfma, 100 * d, 10 * d, 50 * d, 20 * d, 5 * d, *t]
        )
        stamps.append(base + t)
    _csv(folder / "pmc_perf.csv", ident + counters + times, rows, quote=False)
    _csv(folder / "timestamps.csv", ident + times, stamps, quote=False)
    _csv(folder / "roofline.csv",
         ["device", "HBMBw", "HBMBwLow", "hbmBwHigh", "L2Bw", "L1Bw", "LDSBw", "FP32Flops",
          "FP64Flops", "MFMABF16Flops", "MFMAF16Flops", "MFMAF32Flops", "MFMAF64Flops"],
         [[0, 4300.5, 4290.0, 4310.0, 14000.0, 30000.0, 60000.0, 130000.0, 70000.0,
           1100000.0, 1150000.0, 140000.0, 140000.0]], quote=False)  # fmt: skip
    _csv(folder / "sysinfo.csv",
         ["workload_name", "gpu_model", "gpu_arch", "cu_per_gpu", "simd_per_cu", "max_sclk",
          "max_mclk", "hbm_bw", "wave_size", "num_xcd", "rocm_version"],
         [["app", "MI300X_A1", "gfx942", 304, 4, 2100, 1300, 5300, 64, 8, "6.2.0"]], quote=False)  # fmt: skip


def bad(folder: Path) -> None:
    """Inputs that must fail with a clear message naming the file and line."""
    _csv(folder / "no_header_kernel_trace.csv",
         ["KERNEL_DISPATCH", "Agent 1", 1, 1, TID, 1, 10, KERNELS[0][1], 101, T0, T0 + 5, 0, 0,
          16, 0, 24, 256, 1, 1, 1024, 1, 1], [])  # fmt: skip
    _csv(folder / "kernel_trace_missing_end.csv",
         ["Kind", "Agent_Id", "Queue_Id", "Kernel_Name", "Correlation_Id", "Start_Timestamp",
          "Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z", "Workgroup_Size_X", "Workgroup_Size_Y",
          "Workgroup_Size_Z"],
         [["KERNEL_DISPATCH", "Agent 1", 1, "k", 1, T0, 1, 1, 1, 1, 1, 1]])  # fmt: skip
    _csv(folder / "kernel_trace_bad_cell.csv",
         ["Kind", "Agent_Id", "Queue_Id", "Kernel_Name", "Correlation_Id", "Start_Timestamp",
          "End_Timestamp", "Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z", "Workgroup_Size_X",
          "Workgroup_Size_Y", "Workgroup_Size_Z"],
         [["KERNEL_DISPATCH", "Agent 1", 1, "k", 1, T0, T0 + 5, 1, 1, 1, 1, 1, 1],
          ["KERNEL_DISPATCH", "Agent 1", 1, "k", 2, "soon", T0 + 9, 1, 1, 1, 1, 1, 1]])  # fmt: skip
    rocpd(folder / "rocpd_schema_9.db", schema_version="9")


def _zip(folder: Path, dest: Path) -> None:
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zf:
        for p in sorted(folder.rglob("*")):
            if p.is_file():
                info = zipfile.ZipInfo(
                    p.relative_to(folder.parent).as_posix(), (2025, 1, 1, 0, 0, 0)
                )
                zf.writestr(info, p.read_bytes(), zipfile.ZIP_DEFLATED)


def _tar_gz(folder: Path, dest: Path) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for p in sorted(folder.rglob("*")):
            if p.is_file():
                info = tarfile.TarInfo(p.relative_to(folder.parent).as_posix())
                info.size, info.mtime = p.stat().st_size, 0
                tf.addfile(info, io.BytesIO(p.read_bytes()))
    dest.write_bytes(gzip.compress(buf.getvalue(), mtime=0))


def main() -> None:
    """Write every fixture, replacing the previous ones."""
    run = OUT / "v3_csv" / "host1" / str(PID)
    v3_csv_run(run)
    v3_old_kernel_trace(OUT / "v3_old_kernel_trace.csv")
    v3_json(OUT / f"{PID}_results.json")
    rocpd(OUT / f"{PID}_results.db")
    v1(OUT / "v1")
    v2(OUT / "v2")
    compute(OUT / "compute" / "workloads" / "app" / "MI300X_A1")
    bad(OUT / "bad")
    _zip(OUT / "v3_csv" / "host1", OUT / "v3_run.zip")
    _tar_gz(OUT / "v3_csv" / "host1", OUT / "v3_run.tar.gz")
    _zip(OUT / "compute" / "workloads", OUT / "compute_workload.zip")
    mixed = OUT / "mixed" / "host1"
    v3_csv_run(mixed / str(PID))
    v3_csv_run(mixed / "5151", prefix="5151")
    _zip(mixed, OUT / "bad" / "mixed_runs.zip")
    shutil.rmtree(mixed.parent)


if __name__ == "__main__":
    main()
