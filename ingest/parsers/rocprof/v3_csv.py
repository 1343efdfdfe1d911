"""rocprofv3 CSV tables (``<prefix>_kernel_trace.csv`` and friends, FORMATS.md §4.3).

Both column sets are read: Oct-2024 (integer ``Agent_Id``, ``Private/Group_Segment_Size``, no
``Stream_Id``) and 2025 (``"Agent N"`` strings, ``Stream_Id``, ``LDS_Block_Size``,
``Scratch_Size``, register counts). Agent ids are the CSV's logical node ids and are used as
device indices, as ``agent_info.csv`` numbers them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ingest.events import Event, EventBlock, EventKind, ParseReport
from ingest.parsers.rocprof._common import (
    MEMCPY_NO_BYTES,
    Devices,
    agent_index,
    api_kind,
    communication_flags,
    copy_name,
    kernel_args,
    kernel_args_columns,
    mark_communication,
    warn,
)
from ingest.parsers.rocprof._csv import Columns, CsvTable, Row

Counters = dict[int, dict[str, float]]
_TIMES = ("Start_Timestamp", "End_Timestamp")


def tidy(values: dict[str, float]) -> dict[str, float | int]:
    """Counter values with integral floats written as ints (counters are mostly counts)."""
    return {k: int(v) if v.is_integer() else v for k, v in values.items()}


def _span(row: Row) -> tuple[int, int]:
    start, end = row.req_int("Start_Timestamp"), row.req_int("End_Timestamp")
    if end < start:
        raise row.error(f"record ends before it starts ({start} > {end})")
    return start, end - start


def iter_kernels(table: CsvTable, devices: Devices, counters: Counters) -> Iterator[EventBlock]:
    """Kernel dispatches; counters collected for the same ``Dispatch_Id`` are attached.

    Read a block of rows at a time, column by column (`Columns`); a bad cell raises after
    the events of the rows before it, as a row reader would.
    """
    table.require(
        ("Agent_Id", "Queue_Id", "Kernel_Name", "Correlation_Id", *_TIMES, "Grid_Size_X"),
        "rocprofv3 kernel_trace",
    )
    for chunk in table.chunks():
        block = _kernel_block(chunk, devices, counters)
        if len(block):
            yield block
        error = chunk.error()
        if error is not None:
            raise error


def _kernel_block(chunk: Columns, devices: Devices, counters: Counters) -> EventBlock:
    start, dur = chunk.span(*_TIMES)
    labels = chunk.text("Agent_Id")
    agents = [agent_index(label) for label in labels]
    queue, dispatch = chunk.ints("Queue_Id"), chunk.ints("Dispatch_Id")
    grid = [chunk.ints(f"Grid_Size_{a}", required=True) for a in "XYZ"]
    workgroup = [chunk.ints(f"Workgroup_Size_{a}", required=True) for a in "XYZ"]
    stream, kernel_id = chunk.ints("Stream_Id"), chunk.ints("Kernel_Id")
    lds = _fallback(chunk, "LDS_Block_Size", "Group_Segment_Size")
    scratch = _fallback(chunk, "Scratch_Size", "Private_Segment_Size")
    vgpr, accum, sgpr = (chunk.ints(c) for c in ("VGPR_Count", "Accum_VGPR_Count", "SGPR_Count"))
    name = chunk.text("Kernel_Name")
    tid, corr = chunk.ints("Thread_Id"), chunk.ints("Correlation_Id")
    n = chunk.cut
    for agent, label in dict.fromkeys(zip(agents[:n], labels[:n], strict=True)):
        devices.see(agent, agent_label=label)
    extra = {"queue": queue, "hip_stream": stream, "dispatch_id": dispatch,
             "kernel_id": kernel_id, "lds_bytes": lds, "scratch_bytes": scratch,
             "arch_vgpr": vgpr, "accum_vgpr": accum, "sgpr": sgpr}  # fmt: skip
    args = kernel_args_columns(
        [c[:n] for c in grid],  # type: ignore[misc]  # required: no None before the cut
        [c[:n] for c in workgroup],  # type: ignore[misc]
        {k: v[:n] for k, v in extra.items()},
    )
    for row_args, found, comm in zip(args, dispatch, communication_flags(name[:n]), strict=False):
        if found is not None and found in counters:
            row_args["counters"] = tidy(counters[found])
        if comm:
            row_args["communication"] = True
    return EventBlock(
        kind=EventKind.KERNEL, name=name[:n], start_ns=start[:n], dur_ns=dur[:n],
        device=agents[:n], stream=queue[:n], tid=tid[:n], correlation=corr[:n], args=args,
    )  # fmt: skip


def _fallback(chunk: Columns, first: str, second: str) -> list[int | None]:
    """``row.opt_int(first) or row.opt_int(second)``, a column at a time: `second` is read
    only where `first` is empty or 0."""
    a = chunk.ints(first)
    b = chunk.ints(second, when=[not v for v in a])
    return [x or y for x, y in zip(a, b, strict=True)]


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


def iter_api(table: CsvTable) -> Iterator[EventBlock]:
    """HIP/HSA runtime calls, roctx markers and RCCL calls (marked as communication), as
    blocks of one kind each (a column at a time, like `iter_kernels`)."""
    table.require(("Domain", "Function", "Process_Id", "Thread_Id", *_TIMES), "rocprofv3 API")
    for chunk in table.chunks():
        yield from _api_blocks(chunk)
        error = chunk.error()
        if error is not None:
            raise error


def _api_blocks(chunk: Columns) -> Iterator[EventBlock]:
    start, dur = chunk.span(*_TIMES)
    domains, names = chunk.text("Domain"), chunk.text("Function")
    pid, tid, corr = (chunk.ints(c) for c in ("Process_Id", "Thread_Id", "Correlation_Id"))
    n = chunk.cut
    args: list[dict[str, Any] | None] = []
    for domain, name in zip(domains[:n], names[:n], strict=True):
        row_args: dict[str, Any] = {"domain": domain}
        if domain.upper().startswith(("RCCL", "NCCL")):
            row_args["library"] = "rccl"
            mark_communication(name, row_args, api=True)
        args.append(row_args)
    kinds = [api_kind(d) for d in domains[:n]]
    for kind, a, b in chunk.runs(kinds):
        yield EventBlock(
            kind=kind, name=names[a:b], start_ns=start[a:b], dur_ns=dur[a:b], pid=pid[a:b],
            tid=tid[a:b], correlation=corr[a:b], args=args[a:b],
        )  # fmt: skip


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
