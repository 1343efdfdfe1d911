"""One-row-per-dispatch CSVs: rocprof v1 ``results.csv``, rocprofv2 kernel traces and
rocprof-compute ``timestamps.csv`` / ``pmc_perf.csv``.

They share one shape under different spellings (``KernelName``/``Kernel_Name``,
``BeginNs``/``Start_Timestamp``, ``grd``/``Grid_Size``, and the old ``vgpr``/``fbar`` set versus
the newer ``arch_vgpr``/``accum_vgpr``/``wave_size``); every column that is not a known one is
a hardware counter: counters feed the roofline args (`compute.roofline_args`) and, when
there are few, are kept as ``args["counters"]``. ``grd`` is a 1-D size in work-items.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from ingest.events import Event, EventBlock, EventKind
from ingest.parsers.rocprof._common import (
    Devices,
    communication_flags,
    kernel_args,
    kernel_args_columns,
    mark_communication,
)
from ingest.parsers.rocprof._csv import Columns, CsvError, CsvTable, Row
from ingest.parsers.rocprof.compute import roofline_args

# rocprof-compute's pmc_perf.csv has hundreds of counters: keep only their roofline results
MAX_KEPT_COUNTERS = 32

# canonical name -> spellings, first match wins
ALIASES: dict[str, tuple[str, ...]] = {
    "index": ("Index", "Dispatch_ID", "Dispatch_Id"),
    "name": ("KernelName", "Kernel_Name"),
    "gpu": ("gpu-id", "GPU_ID"),
    "queue": ("queue-id", "Queue_ID"),
    "queue_index": ("queue-index",),
    "pid": ("pid", "PID"),
    "tid": ("tid", "TID"),
    "grid": ("grd", "Grid_Size"),
    "workgroup": ("wgr", "Workgroup_Size"),
    "lds": ("lds", "LDS_Per_Workgroup"),
    "scratch": ("scr", "Scratch_Per_Workitem"),
    "arch_vgpr": ("arch_vgpr", "vgpr", "Arch_VGPR"),
    "accum_vgpr": ("accum_vgpr", "Accum_VGPR"),
    "sgpr": ("sgpr", "SGPR"),
    "wave_size": ("wave_size", "Wave_Size"),
    "start": ("BeginNs", "Start_Timestamp"),
    "end": ("EndNs", "End_Timestamp"),
    "correlation": ("Correlation_ID",),
}
_NOT_COUNTERS = frozenset(
    {s for spellings in ALIASES.values() for s in spellings}
    | {
        "fbar",
        "sig",
        "obj",
        "DispatchNs",
        "CompleteNs",
        "DurationNs",
        "Node",
        "GPU_ID_",
        "Unnamed: 0",
    }
)
_PASS_SUFFIX = re.compile(r"_\d+$")


def is_pass_copy_or_known(column: str) -> bool:
    """Whether a column is one of the dispatch's own (not a counter), or a merged pass's
    copy of one: omniperf writes ``obj_1``, ``wave_size_1``, ``GPU_ID_2`` ... when it joins
    the passes' tables side by side.

    >>> [is_pass_copy_or_known(c) for c in ("obj_1", "wave_size_12", "SQ_WAVES", "TCC_HIT_1")]
    [True, True, False, False]
    """
    return column in _NOT_COUNTERS or _PASS_SUFFIX.sub("", column) in _NOT_COUNTERS


class DispatchColumns:
    """Resolved column names of one dispatch header (a CSV's, or a JSON event's arg keys)."""

    def __init__(self, header: list[str], source: str) -> None:
        self.index = {name: i for i, name in enumerate(header)}
        self.col = {
            key: next((s for s in spellings if s in self.index), "")
            for key, spellings in ALIASES.items()
        }
        missing = [ALIASES[k][0] for k in ("name", "gpu", "start", "end") if not self.col[k]]
        if missing:
            raise CsvError(
                f"rocprof dispatch header is missing column(s) {', '.join(missing)} "
                "(kernel timestamps are needed: run rocprof with --timestamp on)",
                source=source,
                location="line 1",
            )
        self.counters = [h for h in header if h and not is_pass_copy_or_known(h)]


def iter_dispatches(table: CsvTable, devices: Devices) -> Iterator[EventBlock]:
    """Kernel events from a dispatch CSV, counters attached, as blocks of columns.

    Raises:
        ParseError: a missing column or a bad cell (file and line named), after the
            events of the rows before it.
    """
    cols = DispatchColumns(table.header, table.source)
    for chunk in table.chunks():
        block = dispatch_block(chunk, cols, devices)
        if len(block):
            yield block
        error = chunk.error()
        if error is not None:
            raise error


def dispatch_block(chunk: Columns, cols: DispatchColumns, devices: Devices) -> EventBlock:
    """The kernel events of a block of dispatch rows, up to its first bad cell
    (`dispatch_event`'s rules, column by column)."""
    c = cols.col
    start = chunk.ints(c["start"], required=True)
    end = chunk.ints(c["end"], required=True)
    chunk.flag_first(
        [s is not None and e is not None and e < s for s, e in zip(start, end, strict=True)],
        lambda i: f"kernel ends before it starts ({c['start']} {start[i]} > {c['end']} {end[i]})",
    )
    gpu = chunk.ints(c["gpu"], required=True)
    queue = _opts(chunk, "queue", cols)
    name = chunk.text(c["name"])
    keys = ("grid", "workgroup", "queue_index", "index", "lds", "scratch", "arch_vgpr",
            "accum_vgpr", "sgpr", "wave_size")  # fmt: skip
    ints = {key: _opts(chunk, key, cols) for key in keys}
    counters = _counter_columns(chunk, cols.counters)
    pid, tid, corr = (_opts(chunk, key, cols) for key in ("pid", "tid", "correlation"))
    n = chunk.cut
    durations = [e - s for s, e in zip(start[:n], end[:n], strict=True)]  # type: ignore[operator]
    if chunk.fractional(c["start"]) or chunk.fractional(c["end"]):
        durations = exact_durations(chunk.text(c["start"])[:n], chunk.text(c["end"])[:n])
    for index in dict.fromkeys(gpu[:n]):
        devices.see(index)
    args = _block_args(n, ints, queue, counters, name)
    return EventBlock(
        kind=EventKind.KERNEL,
        name=name[:n],
        start_ns=start[:n],  # type: ignore[arg-type]  # checked: no None before the cut
        dur_ns=durations,
        device=gpu[:n],
        stream=queue[:n],
        pid=pid[:n],
        tid=tid[:n],
        correlation=corr[:n],
        args=args,
    )


def exact_durations(starts: Sequence[str], ends: Sequence[str]) -> list[int]:
    """Each duration rounded once, from the exact difference of its decimal timestamps.

    rocprof-compute writes fractional ns (``41551790928449.54``); its own summary
    (``pmc_kernel_top.csv``) sums end minus start per dispatch. Rounding each difference
    (not each end) keeps every duration within 0.5 ns of it, so a kernel's total is within
    half a ns per launch of the summary's, with no bias (FORMATS.md, "Public traces").

    >>> exact_durations(["10.4", "3"], ["12.0", "4.5"])
    [2, 2]
    """
    return [
        int((Decimal(e) - Decimal(s)).to_integral_value(ROUND_HALF_UP))
        for s, e in zip(starts, ends, strict=True)
    ]


def _block_args(
    n: int,
    ints: dict[str, list[int | None]],
    queue: list[int | None],
    counters: list[dict[str, Any]],
    name: list[str],
) -> list[dict[str, Any]]:
    """The first `n` rows' args: launch sizes, then counters and their roofline, then the
    communication mark (`dispatch_event`'s keys, in its order)."""
    ones = [1] * n
    sizes = [[v if v is not None else 0 for v in ints[k][:n]] for k in ("grid", "workgroup")]
    extra = {"queue": queue[:n], "queue_index": ints["queue_index"][:n],
             "dispatch_id": ints["index"][:n]}  # fmt: skip
    for key, arg in (("lds", "lds_bytes"), ("scratch", "scratch_bytes"), ("arch_vgpr", None),
                     ("accum_vgpr", None), ("sgpr", None), ("wave_size", None)):  # fmt: skip
        extra[arg or key] = ints[key][:n]
    args = kernel_args_columns((sizes[0], ones, ones), (sizes[1], ones, ones), extra)
    communication = communication_flags(name[:n])
    for row_args, found, comm in zip(args, counters, communication, strict=False):
        if found:
            row_args.update(roofline_args(found))
            if len(found) <= MAX_KEPT_COUNTERS:
                row_args["counters"] = found
        if comm:
            row_args["communication"] = True
    return args


def _opts(chunk: Columns, key: str, cols: DispatchColumns) -> list[int | None]:
    column = cols.col[key]
    return chunk.ints(column) if column else [None] * len(chunk)


def _counter_columns(chunk: Columns, columns: list[str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{} for _ in range(len(chunk))]
    for column in columns:
        for row, value in zip(out, chunk.floats(column), strict=True):
            if value is not None:
                row[column] = int(value) if value.is_integer() else value
    return out


def dispatch_event(row: Row, cols: DispatchColumns, devices: Devices) -> Event:
    """One kernel event from a dispatch row."""
    c = cols.col
    start, end = row.req_int(c["start"]), row.req_int(c["end"])
    if end < start:
        raise row.error(f"kernel ends before it starts ({c['start']} {start} > {c['end']} {end})")
    gpu = row.req_int(c["gpu"])
    devices.see(gpu)
    queue = row.opt_int(c["queue"]) if c["queue"] else None
    name = row.text(c["name"])
    args = kernel_args(
        (_size(row, c["grid"]), 1, 1),
        (_size(row, c["workgroup"]), 1, 1),
        queue=queue,
        queue_index=_opt(row, c["queue_index"]),
        dispatch_id=_opt(row, c["index"]),
        lds_bytes=_opt(row, c["lds"]),
        scratch_bytes=_opt(row, c["scratch"]),
        arch_vgpr=_opt(row, c["arch_vgpr"]),
        accum_vgpr=_opt(row, c["accum_vgpr"]),
        sgpr=_opt(row, c["sgpr"]),
        wave_size=_opt(row, c["wave_size"]),
    )
    counters = _counters(row, cols.counters)
    if counters:
        args.update(roofline_args(counters))
        if len(counters) <= MAX_KEPT_COUNTERS:
            args["counters"] = counters
    mark_communication(name, args)
    return Event(
        kind=EventKind.KERNEL,
        name=name,
        start_ns=start,
        dur_ns=end - start,
        device=gpu,
        stream=queue,
        pid=_opt(row, c["pid"]),
        tid=_opt(row, c["tid"]),
        correlation=_opt(row, c["correlation"]),
        args=args,
    )


def _opt(row: Row, column: str) -> int | None:
    return row.opt_int(column) if column else None


def _size(row: Row, column: str) -> int:
    value = _opt(row, column)
    return value if value is not None else 0


def _counters(row: Row, columns: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for column in columns:
        value = row.opt_float(column)
        if value is not None:
            out[column] = int(value) if value.is_integer() else value
    return out
