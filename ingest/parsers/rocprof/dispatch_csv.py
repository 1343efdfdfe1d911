"""One-row-per-dispatch CSVs: rocprof v1 ``results.csv``, rocprofv2 kernel traces and
rocprof-compute ``timestamps.csv`` / ``pmc_perf.csv``.

They share one shape under different spellings (``KernelName``/``Kernel_Name``,
``BeginNs``/``Start_Timestamp``, ``grd``/``Grid_Size``, and the old ``vgpr``/``fbar`` set versus
the newer ``arch_vgpr``/``accum_vgpr``/``wave_size``); every column that is not a known one is
a hardware counter: counters feed the roofline args (`compute.roofline_args`) and, when
there are few, are kept as ``args["counters"]``. ``grd`` is a 1-D size in work-items.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ingest.events import Event, EventKind
from ingest.parsers.rocprof._common import Devices, kernel_args, mark_communication
from ingest.parsers.rocprof._csv import CsvError, CsvTable, Row
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
        self.counters = [h for h in header if h and h not in _NOT_COUNTERS]


def iter_dispatches(table: CsvTable, devices: Devices) -> Iterator[Event]:
    """Kernel events from a dispatch CSV, counters attached.

    Raises:
        ParseError: a missing column or a bad cell (file and line named).
    """
    cols = DispatchColumns(table.header, table.source)
    for row in table.rows():
        yield dispatch_event(row, cols, devices)


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
