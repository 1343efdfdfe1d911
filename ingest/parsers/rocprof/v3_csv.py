"""rocprofv3 CSV tables (``<prefix>_kernel_trace.csv`` and friends, FORMATS.md §4.3).

Both column sets are read: Oct-2024 (integer ``Agent_Id``, ``Private/Group_Segment_Size``, no
``Stream_Id``) and 2025 (``"Agent N"`` strings, ``Stream_Id``, ``LDS_Block_Size``,
``Scratch_Size``, register counts). Agent ids are the CSV's logical node ids and are used as
device indices, as ``agent_info.csv`` numbers them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ingest.events import Event, EventKind, ParseReport
from ingest.parsers.rocprof._common import (
    MEMCPY_NO_BYTES,
    Devices,
    agent_index,
    api_kind,
    copy_name,
    kernel_args,
    mark_communication,
    warn,
)
from ingest.parsers.rocprof._csv import CsvTable, Row

Counters = dict[int, dict[str, float]]
_TIMES = ("Start_Timestamp", "End_Timestamp")


def _xyz(row: Row, prefix: str) -> tuple[int, int, int]:
    return row.req_int(prefix + "X"), row.req_int(prefix + "Y"), row.req_int(prefix + "Z")


def tidy(values: dict[str, float]) -> dict[str, float | int]:
    """Counter values with integral floats written as ints (counters are mostly counts)."""
    return {k: int(v) if v.is_integer() else v for k, v in values.items()}


def _span(row: Row) -> tuple[int, int]:
    start, end = row.req_int("Start_Timestamp"), row.req_int("End_Timestamp")
    if end < start:
        raise row.error(f"record ends before it starts ({start} > {end})")
    return start, end - start


def iter_kernels(table: CsvTable, devices: Devices, counters: Counters) -> Iterator[Event]:
    """Kernel dispatches; counters collected for the same ``Dispatch_Id`` are attached."""
    table.require(
        ("Agent_Id", "Queue_Id", "Kernel_Name", "Correlation_Id", *_TIMES, "Grid_Size_X"),
        "rocprofv3 kernel_trace",
    )
    for row in table.rows():
        start, dur = _span(row)
        agent = agent_index(row.text("Agent_Id"))
        devices.see(agent, agent_label=row.text("Agent_Id"))
        queue = row.opt_int("Queue_Id")
        dispatch = row.opt_int("Dispatch_Id")
        args = kernel_args(
            _xyz(row, "Grid_Size_"),
            _xyz(row, "Workgroup_Size_"),
            queue=queue,
            hip_stream=row.opt_int("Stream_Id"),
            dispatch_id=dispatch,
            kernel_id=row.opt_int("Kernel_Id"),
            lds_bytes=row.opt_int("LDS_Block_Size") or row.opt_int("Group_Segment_Size"),
            scratch_bytes=row.opt_int("Scratch_Size") or row.opt_int("Private_Segment_Size"),
            arch_vgpr=row.opt_int("VGPR_Count"),
            accum_vgpr=row.opt_int("Accum_VGPR_Count"),
            sgpr=row.opt_int("SGPR_Count"),
        )
        if dispatch is not None and dispatch in counters:
            args["counters"] = tidy(counters[dispatch])
        name = row.text("Kernel_Name")
        mark_communication(name, args)
        yield Event(
            kind=EventKind.KERNEL,
            name=name,
            start_ns=start,
            dur_ns=dur,
            device=agent,
            stream=queue,
            tid=row.opt_int("Thread_Id"),
            correlation=row.opt_int("Correlation_Id"),
            args=args,
        )


def iter_copies(table: CsvTable, devices: Devices, report: ParseReport) -> Iterator[Event]:
    """Memory copies, without bytes: the CSV has no size column (a warning says so)."""
    table.require(("Direction", "Source_Agent_Id", "Destination_Agent_Id", *_TIMES), "memory_copy")
    warn(report, f"{table.source}: {MEMCPY_NO_BYTES}")
    for row in table.rows():
        start, dur = _span(row)
        direction = row.text("Direction")
        src, dst = row.text("Source_Agent_Id"), row.text("Destination_Agent_Id")
        device = agent_index(src if "DEVICE_TO" in direction else dst)
        devices.see(device)
        args: dict[str, Any] = {"direction": direction, "src_agent": src, "dst_agent": dst}
        stream = row.opt_int("Stream_Id")
        if stream is not None:
            args["hip_stream"] = stream
        yield Event(
            kind=EventKind.MEMCPY,
            name=copy_name(direction),
            start_ns=start,
            dur_ns=dur,
            device=device,
            stream=stream,
            correlation=row.opt_int("Correlation_Id"),
            args=args,
        )


def iter_allocations(table: CsvTable) -> Iterator[Event]:
    """Allocations and frees as memory events (``Bytes`` negative for a free, as Kineto)."""
    table.require(("Operation", "Allocation_Size", *_TIMES), "memory_allocation_trace")
    for row in table.rows():
        start, dur = _span(row)
        operation = row.text("Operation").removeprefix("MEMORY_ALLOCATION_").lower()
        size = row.req_int("Allocation_Size")
        yield Event(
            kind=EventKind.MEMORY,
            name=f"memory {operation}",
            start_ns=start,
            dur_ns=dur,
            device=agent_index(row.text("Agent_Id")),
            correlation=row.opt_int("Correlation_Id"),
            args={
                "Bytes": -size if operation == "free" else size,
                "Addr": row.text("Address"),
                "operation": operation,
            },
        )


def iter_api(table: CsvTable) -> Iterator[Event]:
    """HIP/HSA runtime calls, roctx markers and RCCL calls (marked as communication)."""
    table.require(("Domain", "Function", "Process_Id", "Thread_Id", *_TIMES), "rocprofv3 API")
    for row in table.rows():
        start, dur = _span(row)
        domain, name = row.text("Domain"), row.text("Function")
        args: dict[str, Any] = {"domain": domain}
        if domain.upper().startswith(("RCCL", "NCCL")):
            args["library"] = "rccl"
            mark_communication(name, args, api=True)
        yield Event(
            kind=api_kind(domain),
            name=name,
            start_ns=start,
            dur_ns=dur,
            pid=row.opt_int("Process_Id"),
            tid=row.opt_int("Thread_Id"),
            correlation=row.opt_int("Correlation_Id"),
            args=args,
        )


def read_counters(table: CsvTable) -> tuple[Counters, list[Row]]:
    """Counter values summed per dispatch, plus one row per dispatch for counter-only uploads."""
    table.require(("Dispatch_Id", "Kernel_Name", "Counter_Name", "Counter_Value"), "counters")
    counters: Counters = {}
    first: dict[int, Row] = {}
    for row in table.rows():
        dispatch = row.req_int("Dispatch_Id")
        value = row.opt_float("Counter_Value") or 0.0
        per = counters.setdefault(dispatch, {})
        name = row.text("Counter_Name")
        per[name] = per.get(name, 0.0) + value
        first.setdefault(dispatch, row)
    return counters, list(first.values())


def iter_counter_dispatches(
    rows: list[Row], counters: Counters, devices: Devices, report: ParseReport
) -> Iterator[Event]:
    """Kernel events from counter rows alone (no kernel_trace beside them)."""
    for row in rows:
        timed = row.has("Start_Timestamp")
        start, dur = _span(row) if timed else (0, 0)
        if not timed:
            warn(report, f"{row.source}: no timestamps; dispatches are listed with zero duration")
        agent = agent_index(row.text("Agent_Id"))
        devices.see(agent)
        dispatch = row.req_int("Dispatch_Id")
        args = kernel_args(
            (row.opt_int("Grid_Size") or 0, 1, 1),
            (row.opt_int("Workgroup_Size") or 0, 1, 1),
            queue=row.opt_int("Queue_Id"),
            dispatch_id=dispatch,
            counters=tidy(counters[dispatch]),
        )
        yield Event(
            kind=EventKind.KERNEL,
            name=row.text("Kernel_Name"),
            start_ns=start,
            dur_ns=dur,
            device=agent,
            stream=row.opt_int("Queue_Id"),
            pid=row.opt_int("Process_Id"),
            tid=row.opt_int("Thread_Id"),
            correlation=row.opt_int("Correlation_Id"),
            args=args,
        )


def read_agents(table: CsvTable, devices: Devices) -> None:
    """GPU agents from ``agent_info.csv`` become devices, keyed by logical node id."""
    table.require(("Logical_Node_Id", "Agent_Type"), "agent_info")
    for row in table.rows():
        if row.text("Agent_Type").upper() != "GPU":
            continue
        devices.see(
            row.req_int("Logical_Node_Id"),
            row.text("Product_Name") or row.text("Model_Name") or row.text("Name"),
            vendor="AMD",
            arch=row.text("Name"),
            compute_units=row.opt_int("Cu_Count"),
            simd_per_cu=row.opt_int("Simd_Per_Cu"),
            wave_size=row.opt_int("Wave_Front_Size"),
            max_clock_mhz=row.opt_int("Max_Engine_Clk_Fcompute"),
            node_id=row.opt_int("Node_Id"),
            gpu_id=row.opt_int("Gpu_Id"),
        )
