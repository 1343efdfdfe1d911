"""Rows of an Nsight Systems export's activity tables turned into normalised events.

Each reader builds its SELECT from the columns the export actually has (missing optional
columns read as NULL), joins interned strings in SQL, and iterates the cursor row by row, so
memory stays flat however large the export is. Names and args follow the Kineto parser's
conventions (``Memcpy HtoD (Pinned -> Device)``, ``grid``/``block``/``registers per
thread``/``shared memory``, ``bytes``) so `ingest.classify` and the summaries treat both
formats alike; NCCL kernels keep their ``nccl...`` names, which is how
`ingest.classify.is_communication` recognises communication in every format.

These are the reference for `_nsys_arrow`, which reads the large tables as Arrow columns with
the same values and rules, and falls back to these for a table whose columns the ADBC driver
cannot type; the small tables (graph nodes) are only read here.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Iterator
from itertools import islice
from operator import sub
from typing import Any

from ingest.events import Event, EventBlock, EventKind, ParseReport

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
SYNC = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
NVTX = "NVTX_EVENTS"
GRAPH_NODES = "CUDA_GRAPH_NODE_EVENTS"
REQUIRED_COLUMNS: dict[str, tuple[str, ...]] = {
    KERNEL: ("start", "end", "deviceId", "streamId"),
    MEMCPY: ("start", "end", "deviceId", "streamId", "bytes", "copyKind"),
    MEMSET: ("start", "end", "deviceId", "streamId", "bytes"),
    SYNC: ("start", "end"),
    RUNTIME: ("start", "end", "nameId"),
    NVTX: ("start", "eventType"),
    GRAPH_NODES: ("start", "end", "nameId", "graphNodeId"),
}
# Enum values (ENUM_* tables in schema 3.x; hard-coded because 2.x has none: FORMATS.md §2.3).
COPY_KINDS = {
    1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD", 7: "DtoA", 8: "DtoD",
    9: "HtoH", 10: "PtoP", 11: "HtoD", 12: "DtoH", 13: "DtoD",
}  # fmt: skip
MEM_KINDS = {
    0: "Pageable", 1: "Pinned", 2: "Device", 3: "Array", 4: "Managed", 5: "Device Static",
    6: "Managed Static",
}  # fmt: skip
SYNC_TYPES = {1: "Event Sync", 2: "Stream Wait Event", 3: "Stream Sync", 4: "Context Sync"}
RUNTIME_CLASSES = {0: "runtime", 1: "driver", 67: "backtrace"}
BACKTRACE_CLASS = 67
NVTX_STYLES = {34: "Mark", 59: "PushPop", 60: "StartEnd"}
NVTX_DOMAIN_CREATE = 75
_KERNEL_OPTIONAL = (
    "contextId", "correlationId", "globalPid", "gridX", "gridY", "gridZ", "blockX", "blockY",
    "blockZ", "registersPerThread", "staticSharedMemory", "dynamicSharedMemory", "graphNodeId",
)  # fmt: skip
ABI_SUFFIX = re.compile(r"_v\d+$")
BLOCK_ROWS = 16_384  # rows per EventBlock (and per Arrow batch in `_nsys_arrow`)


def _col(alias: str, name: str, cols: set[str]) -> str:
    return f"{alias}.{name}" if name in cols else "NULL"


def _pid(global_id: int | None) -> int | None:
    """Process id from an nsys serialized GlobalId (``(id >> 24) & 0xFFFFFF``).

    >>> _pid(281483465981952), _pid(None)
    (506, None)
    """
    return None if global_id is None else (global_id >> 24) & 0xFFFFFF


def _tid(global_id: int | None) -> int | None:
    return None if global_id is None else global_id & 0xFFFFFF


def warn(report: ParseReport, message: str) -> None:
    """Record a warning (not a skipped event), keeping only the report's first few."""
    if len(report.warnings) < report.max_warnings:
        report.warnings.append(message)


def kernels(conn: sqlite3.Connection, cols: set[str]) -> Iterator[Event]:
    """Kernels named by their demangled name (what ``nsys stats`` groups by); the short name,
    launch configuration, context and graph node id go in args."""
    demangled = "d.value" if "demangledName" in cols else "s.value"
    short = "s.value" if "shortName" in cols else demangled
    optional = ", ".join(_col("k", c, cols) for c in _KERNEL_OPTIONAL)
    sql = (
        f"SELECT k.start, k.end, k.deviceId, k.streamId, {demangled}, {short}, {optional} "
        f"FROM {KERNEL} k "
        f"LEFT JOIN StringIds d ON d.id = {_col('k', 'demangledName', cols)} "
        f"LEFT JOIN StringIds s ON s.id = {_col('k', 'shortName', cols)}"
    )
    names: dict[str, str] = {}
    for row in conn.execute(sql):
        start, end, device, stream, name, short_name, ctx, corr, gpid = row[:9]
        gx, gy, gz, bx, by, bz, regs, static, dynamic, node = row[9:]
        name = names.setdefault(name or short_name or "", name or short_name or "")
        args = {
            "short name": short_name,
            "grid": [gx, gy, gz],
            "block": [bx, by, bz],
            "registers per thread": regs,
            "shared memory": (static or 0) + (dynamic or 0),
            "static shared memory": static,
            "dynamic shared memory": dynamic,
            "context": ctx,
        }
        if node is not None:
            args["graph node id"] = node
        yield Event(
            kind=EventKind.KERNEL,
            name=name,
            start_ns=start,
            dur_ns=end - start,
            device=device,
            stream=stream,
            pid=_pid(gpid),
            correlation=corr,
            args=args,
        )


def memcpys(conn: sqlite3.Connection, cols: set[str]) -> Iterator[Event]:
    """Copies, named as Kineto names them: ``Memcpy HtoD (Pageable -> Device)``."""
    optional = ", ".join(
        _col("m", c, cols)
        for c in ("srcKind", "dstKind", "contextId", "correlationId", "globalPid", "graphNodeId")
    )
    sql = (
        f"SELECT m.start, m.end, m.deviceId, m.streamId, m.bytes, m.copyKind, {optional} "
        f"FROM {MEMCPY} m"
    )
    for row in conn.execute(sql):
        start, end, device, stream, size, kind, src, dst, ctx, corr, gpid, node = row
        copy = COPY_KINDS.get(kind, "Unknown")
        src_kind, dst_kind = MEM_KINDS.get(src, "Unknown"), MEM_KINDS.get(dst, "Unknown")
        dur = end - start
        args = {
            "bytes": size,
            "copy kind": copy,
            "src kind": src_kind,
            "dst kind": dst_kind,
            "memory bandwidth (GB/s)": round(size / dur, 3) if dur > 0 else None,
            "context": ctx,
        }
        if node is not None:
            args["graph node id"] = node
        name = f"Memcpy {copy} ({src_kind} -> {dst_kind})"
        yield Event(
            kind=EventKind.MEMCPY,
            name=name,
            start_ns=start,
            dur_ns=dur,
            device=device,
            stream=stream,
            pid=_pid(gpid),
            correlation=corr,
            args=args,
        )


def memsets(conn: sqlite3.Connection, cols: set[str]) -> Iterator[Event]:
    """Memsets, named as Kineto names them: ``Memset (Device)``."""
    optional = ", ".join(
        _col("m", c, cols)
        for c in ("value", "memKind", "contextId", "correlationId", "globalPid", "graphNodeId")
    )
    sql = f"SELECT m.start, m.end, m.deviceId, m.streamId, m.bytes, {optional} FROM {MEMSET} m"
    for start, end, device, stream, size, value, kind, ctx, corr, gpid, node in conn.execute(sql):
        mem = MEM_KINDS.get(kind, "Device")
        dur = end - start
        args = {
            "bytes": size,
            "value": value,
            "memory kind": mem,
            "memory bandwidth (GB/s)": round(size / dur, 3) if dur > 0 else None,
            "context": ctx,
        }
        if node is not None:
            args["graph node id"] = node
        yield Event(
            kind=EventKind.MEMSET,
            name=f"Memset ({mem})",
            start_ns=start,
            dur_ns=dur,
            device=device,
            stream=stream,
            pid=_pid(gpid),
            correlation=corr,
            args=args,
        )


def syncs(conn: sqlite3.Connection, cols: set[str]) -> Iterator[Event]:
    """Synchronisations CUPTI saw (event, stream, context syncs and stream waits)."""
    optional = ", ".join(
        _col("s", c, cols)
        for c in ("deviceId", "streamId", "syncType", "contextId", "correlationId", "globalPid")
    )
    for start, end, device, stream, kind, ctx, corr, gpid in conn.execute(
        f"SELECT s.start, s.end, {optional} FROM {SYNC} s"
    ):
        name = SYNC_TYPES.get(kind, "Sync")
        yield Event(
            kind=EventKind.SYNC,
            name=name,
            start_ns=start,
            dur_ns=end - start,
            device=device,
            stream=stream,
            pid=_pid(gpid),
            correlation=corr,
            args={"sync type": name, "context": ctx},
        )


def runtime_calls(
    conn: sqlite3.Connection, cols: set[str], report: ParseReport
) -> Iterator[EventBlock]:
    """CUDA runtime and driver calls, names without their ``_vNNNN`` ABI suffix, as blocks of
    `BLOCK_ROWS` calls (most rows of a large export are these: no `Event` per call).

    Exports made with CUDA backtraces hold a second, backtrace-class row for the same call
    (same process and correlation id, FORMATS.md §2.5); those duplicates are dropped, and a
    backtrace row is kept only when its call has no runtime or driver row.
    """
    klass, tid, corr = (_col("r", c, cols) for c in ("eventClass", "globalTid", "correlationId"))
    base = (
        f"SELECT r.start, r.end, {klass}, {tid}, {corr}, s.value FROM {RUNTIME} r "
        "LEFT JOIN StringIds s ON s.id = r.nameId"
    )
    backtraces: dict[tuple[int | None, int | None], tuple[object, ...]] = {}
    if "eventClass" in cols:
        for row in conn.execute(f"{base} WHERE r.eventClass = {BACKTRACE_CLASS}"):
            backtraces.setdefault((_pid(row[3]), row[4]), row)
        base += f" WHERE r.eventClass <> {BACKTRACE_CLASS}"
    names: dict[Any, str] = {}
    yield from _runtime_blocks(conn.execute(base), backtraces, names)
    if backtraces:
        warn(report, f"{len(backtraces)} CUDA backtrace rows had no runtime/driver row; kept")
        yield from _runtime_blocks(list(backtraces.values()), {}, names)


def _runtime_blocks(
    rows: Iterable[tuple[Any, ...]],
    backtraces: dict[tuple[int | None, int | None], tuple[Any, ...]],
    names: dict[Any, str],
) -> Iterator[EventBlock]:
    """Columns of each block of rows (start, end, class, globalTid, correlation, name);
    every per-row step is a comprehension or a builtin over a column."""
    classes = {k: {"api": v} for k, v in RUNTIME_CLASSES.items()}  # shared, read-only
    it = iter(rows)
    while chunk := list(islice(it, BLOCK_ROWS)):
        starts, ends, klasses, gtids, corrs, raws = zip(*chunk, strict=True)
        threads = {g: (_pid(g), _tid(g)) for g in set(gtids)}  # a few threads, many calls
        pids, tids = zip(*map(threads.__getitem__, gtids), strict=True)
        if backtraces:
            for key in zip(pids, corrs, strict=True):
                backtraces.pop(key, None)
        for raw in set(raws) - names.keys():
            names[raw] = ABI_SUFFIX.sub("", str(raw or ""))
        yield EventBlock(
            kind=EventKind.RUNTIME,
            name=list(map(names.__getitem__, raws)),
            start_ns=starts,
            dur_ns=list(map(sub, ends, starts)),
            pid=pids,
            tid=tids,
            correlation=corrs,
            args=list(map(classes.get, klasses)),
        )


def nvtx_ranges(conn: sqlite3.Connection, cols: set[str], report: ParseReport) -> Iterator[Event]:
    """NVTX push/pop and start/end ranges and marks, with their domain (NCCL's included).

    Name = the inline ``text`` or the registered string (``textId``); domain names come from
    the ``NvtxDomainCreate`` rows. Ranges never closed (no ``end``) are skipped and counted.
    """
    text = _col("n", "text", cols)
    text_id = _col("n", "textId", cols)
    domain_col = _col("n", "domainId", cols)
    domains = nvtx_domains(conn, cols)
    styles = ", ".join(str(k) for k in NVTX_STYLES)
    sql = (
        f"SELECT n.start, {_col('n', 'end', cols)}, n.eventType, {_col('n', 'globalTid', cols)}, "
        f"{domain_col}, COALESCE({text}, s.value) FROM {NVTX} n "
        f"LEFT JOIN StringIds s ON s.id = {text_id} WHERE n.eventType IN ({styles})"
    )
    for start, end, kind, gtid, domain, name in conn.execute(sql):
        style = NVTX_STYLES[kind]
        if end is None and style != "Mark":
            report.skip(f"{NVTX}: NVTX range {name!r} at {start} ns has no end")
            continue
        args: dict[str, object] = {"style": style}
        if domain:
            args["domain"] = domains.get(domain, str(domain))
        yield Event(
            kind=EventKind.ANNOTATION,
            name=str(name or ""),
            start_ns=start,
            dur_ns=(end or start) - start,
            pid=_pid(gtid),
            tid=_tid(gtid),
            args=args,
        )


def nvtx_domains(conn: sqlite3.Connection, cols: set[str]) -> dict[int, str]:
    """NVTX domain names by id, from the ``NvtxDomainCreate`` rows."""
    if "domainId" not in cols:
        return {}
    create = (
        f"SELECT n.domainId, COALESCE({_col('n', 'text', cols)}, s.value) FROM {NVTX} n "
        f"LEFT JOIN StringIds s ON s.id = {_col('n', 'textId', cols)} "
        f"WHERE n.eventType = {NVTX_DOMAIN_CREATE}"
    )
    return {d: str(name) for d, name in conn.execute(create) if name is not None}


def graph_nodes(conn: sqlite3.Connection, cols: set[str]) -> Iterator[Event]:
    """CPU-side CUDA graph node creation; the kernels a node ran carry ``graph node id``."""
    optional = ", ".join(_col("g", c, cols) for c in ("globalTid", "originalGraphNodeId"))
    sql = (
        f"SELECT g.start, g.end, g.graphNodeId, {optional}, s.value FROM {GRAPH_NODES} g "
        "LEFT JOIN StringIds s ON s.id = g.nameId"
    )
    for start, end, node, gtid, original, name in conn.execute(sql):
        args = {"api": "graph", "graph node id": node, "original graph node id": original}
        yield Event(
            kind=EventKind.RUNTIME,
            name=str(name or "Graph Node Creation"),
            start_ns=start,
            dur_ns=end - start,
            pid=_pid(gtid),
            tid=_tid(gtid),
            args=args,
        )
