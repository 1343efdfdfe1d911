"""rocpd SQLite (rocprofv3 ``--output-format rocpd``, the 2025 default; FORMATS.md §4.4).

Opened read-only and immutable, so a hostile file cannot make us write anywhere, with values
capped and the views read checked to be rocpd's plain ones (`ingest.parsers._sqlite`); a
kernel's full name is read only when it has no display name. Only schema
version 3 is read, through the unsuffixed ``rocpd_*`` views every rocpd file defines (the
convenience views such as ``kernels`` changed across 2025 releases). Agent ids are mapped to
the agents' logical indices, as the CSV output numbers them.

Two layouts of schema 3 have shipped, told apart by the columns present, not the version
string: rocprofiler-sdk's own (``start``/``end`` inline in each activity table, ``pid``/``tid``
ids into ``rocpd_info_process``/``rocpd_info_thread``), and one with ``start_id``/``end_id``
into ``rocpd_timestamp`` and a ``track_id`` into ``rocpd_track`` holding OS pid/tid.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

from ingest.errors import ParseError
from ingest.events import Event, EventKind, ParseReport, TraceFormat, TraceHeader
from ingest.parsers._sqlite import TextBudget, check_tables, open_upload
from ingest.parsers.rocprof._common import (
    Devices,
    api_kind,
    copy_name,
    kernel_args,
    mark_communication,
)
from ingest.parsers.rocprof._databases import ROCPD, database_kind
from ingest.parsers.rocprof._files import RocFile

SUPPORTED_SCHEMAS = frozenset({"3"})
Rows = Iterator[Any]
# The views read: each must be rocpd's plain `SELECT * FROM <suffixed table>`.
READ_VIEWS = (
    "rocpd_metadata", "rocpd_string", "rocpd_info_agent", "rocpd_info_kernel_symbol",
    "rocpd_track", "rocpd_timestamp", "rocpd_event", "rocpd_region", "rocpd_kernel_dispatch",
    "rocpd_memory_copy", "rocpd_memory_allocate", "rocpd_info_process", "rocpd_info_thread",
)  # fmt: skip

_KERNELS = """
SELECT s.value, e.value, t.agent_id, t.queue_id, t.stream_id, t.pid, t.tid, NULL,
       COALESCE(NULLIF(ks.display_name, ''), ks.kernel_name), k.dispatch_id, k.kernel_id,
       k.grid_size_x, k.grid_size_y, k.grid_size_z,
       k.workgroup_size_x, k.workgroup_size_y, k.workgroup_size_z, k.group_segment_size,
       k.private_segment_size, ks.arch_vgpr_count, ks.accum_vgpr_count, ks.sgpr_count,
       ev.correlation_id
FROM rocpd_kernel_dispatch k
JOIN rocpd_timestamp s ON s.id = k.start_id JOIN rocpd_timestamp e ON e.id = k.end_id
JOIN rocpd_track t ON t.id = k.track_id
LEFT JOIN rocpd_info_kernel_symbol ks ON ks.id = k.kernel_id
LEFT JOIN rocpd_event ev ON ev.id = k.event_id
"""
_COPIES = """
SELECT s.value, e.value, n.string, m.size, m.src_agent_id, m.dst_agent_id, t.stream_id,
       ev.correlation_id
FROM rocpd_memory_copy m
JOIN rocpd_timestamp s ON s.id = m.start_id JOIN rocpd_timestamp e ON e.id = m.end_id
JOIN rocpd_track t ON t.id = m.track_id LEFT JOIN rocpd_string n ON n.id = m.name_id
LEFT JOIN rocpd_event ev ON ev.id = m.event_id
"""
_REGIONS = """
SELECT s.value, e.value, n.string, c.string, t.pid, t.tid, ev.correlation_id
FROM rocpd_region r
JOIN rocpd_timestamp s ON s.id = r.start_id JOIN rocpd_timestamp e ON e.id = r.end_id
JOIN rocpd_track t ON t.id = r.track_id LEFT JOIN rocpd_string n ON n.id = r.name_id
LEFT JOIN rocpd_event ev ON ev.id = r.event_id LEFT JOIN rocpd_string c ON c.id = ev.category_id
"""
_ALLOCATIONS = """
SELECT s.value, e.value, m.type, m.level, m.size, m.address, t.agent_id, ev.correlation_id
FROM rocpd_memory_allocate m
JOIN rocpd_timestamp s ON s.id = m.start_id JOIN rocpd_timestamp e ON e.id = m.end_id
JOIN rocpd_track t ON t.id = m.track_id LEFT JOIN rocpd_event ev ON ev.id = m.event_id
"""

# The same four queries for the inline layout (see the module docstring); columns in the
# same order, so one reader serves both.
_PROCESS = "LEFT JOIN rocpd_info_process p ON p.id = {t}.pid"
_THREAD = "LEFT JOIN rocpd_info_thread th ON th.id = {t}.tid"
_INLINE_KERNELS = f"""
SELECT k.start, k."end", k.agent_id, k.queue_id, k.stream_id, p.pid, th.tid, NULL,
       COALESCE(NULLIF(ks.display_name, ''), ks.kernel_name), k.dispatch_id, k.kernel_id,
       k.grid_size_x, k.grid_size_y, k.grid_size_z,
       k.workgroup_size_x, k.workgroup_size_y, k.workgroup_size_z, k.group_segment_size,
       k.private_segment_size, ks.arch_vgpr_count, ks.accum_vgpr_count, ks.sgpr_count,
       ev.correlation_id
FROM rocpd_kernel_dispatch k {_PROCESS.format(t="k")} {_THREAD.format(t="k")}
LEFT JOIN rocpd_info_kernel_symbol ks ON ks.id = k.kernel_id
LEFT JOIN rocpd_event ev ON ev.id = k.event_id
"""
_INLINE_COPIES = """
SELECT m.start, m."end", n.string, m.size, m.src_agent_id, m.dst_agent_id, m.stream_id,
       ev.correlation_id
FROM rocpd_memory_copy m LEFT JOIN rocpd_string n ON n.id = m.name_id
LEFT JOIN rocpd_event ev ON ev.id = m.event_id
"""
_INLINE_REGIONS = f"""
SELECT r.start, r."end", n.string, c.string, p.pid, th.tid, ev.correlation_id
FROM rocpd_region r {_PROCESS.format(t="r")} {_THREAD.format(t="r")}
LEFT JOIN rocpd_string n ON n.id = r.name_id
LEFT JOIN rocpd_event ev ON ev.id = r.event_id LEFT JOIN rocpd_string c ON c.id = ev.category_id
"""
_INLINE_ALLOCATIONS = """
SELECT m.start, m."end", m.type, m.level, m.size, m.address, m.agent_id, ev.correlation_id
FROM rocpd_memory_allocate m LEFT JOIN rocpd_event ev ON ev.id = m.event_id
"""
_LAYOUTS = {
    "ids": (_KERNELS, _COPIES, _REGIONS, _ALLOCATIONS),
    "inline": (_INLINE_KERNELS, _INLINE_COPIES, _INLINE_REGIONS, _INLINE_ALLOCATIONS),
}


def parse(
    f: RocFile, header: TraceHeader, devices: Devices, report: ParseReport, *, max_bytes: int
) -> Iterator[Event]:
    """Check the database now; return its events (kernels first) as a lazy iterator.

    Raises:
        ParseError: not a rocpd database, an unknown schema version, or an unreadable table
            (the last one while iterating).
    """
    try:
        conn = open_upload(f.path, immutable=True)
    except sqlite3.Error as e:
        raise ParseError(f"unreadable rocpd database: {e}", source=f.name) from e
    try:
        check_tables(conn, READ_VIEWS, f.name, views=True)
        version = _schema_version(conn, f.name)
        layout = _layout(conn, f.name)
        agents = _agents(conn, devices)
    except (sqlite3.Error, UnicodeDecodeError) as e:  # corrupt TEXT is not UTF-8
        conn.close()
        raise ParseError(f"unreadable rocpd database: {e}", source=f.name) from e
    except ParseError:
        conn.close()
        raise
    header.format = TraceFormat.ROCPD_SQLITE
    header.metadata.update(profiler="rocprofv3", rocpd_schema_version=version, rocpd_layout=layout)
    return _events(conn, _LAYOUTS[layout], agents, devices, TextBudget(max_bytes, f.name))


def _layout(conn: sqlite3.Connection, source: str) -> str:
    """Which of the shipped layouts the database uses, from its kernel table's columns.

    Raises:
        ParseError: neither layout's time columns are there.
    """
    columns = {r[1] for r in conn.execute('PRAGMA table_info("rocpd_kernel_dispatch")')}
    if {"start_id", "end_id", "track_id"} <= columns:
        return "ids"
    if {"start", "end"} <= columns:
        return "inline"
    raise ParseError(
        "rocpd_kernel_dispatch has neither start/end nor start_id/end_id/track_id columns "
        f"(it has {', '.join(sorted(columns)) or 'no columns'}); perfdash knows both layouts "
        "rocprofiler-sdk has shipped",
        source=source,
        location="rocpd_kernel_dispatch",
    )


def _events(
    conn: sqlite3.Connection,
    queries: tuple[str, str, str, str],
    agents: dict[int, int],
    devices: Devices,
    budget: TextBudget,
) -> Iterator[Event]:
    kernels, copies, regions, allocations = queries
    readers: tuple[tuple[str, str, Callable[[Rows], Iterator[Event]]], ...] = (
        ("rocpd_kernel_dispatch", kernels, lambda rows: _kernels(rows, agents, devices)),
        ("rocpd_memory_copy", copies, lambda rows: _copies(rows, agents)),
        ("rocpd_region", regions, _regions),
        ("rocpd_memory_allocate", allocations, lambda rows: _allocations(rows, agents)),
    )
    with closing(conn):
        try:
            for table, query, read in readers:
                for event in read(conn.execute(query)):
                    budget.take(event, table)
                    yield event
        except (sqlite3.Error, UnicodeDecodeError) as e:  # corrupt TEXT is not UTF-8
            raise ParseError(f"unreadable rocpd table: {e}", source=budget.source) from e


def is_rocpd(path: Path) -> bool:
    """Whether an SQLite file is a rocpd database (has a ``rocpd_metadata`` table or view)."""
    return database_kind(path) == ROCPD


def _schema_version(conn: sqlite3.Connection, source: str) -> str:
    try:
        rows = conn.execute("SELECT value FROM rocpd_metadata WHERE tag = 'schema_version'")
        found = [str(r[0]) for r in rows]
    except (sqlite3.DatabaseError, UnicodeDecodeError) as e:
        raise ParseError(
            f"not a rocpd database (no readable rocpd_metadata table: {e})", source=source
        ) from e
    version = found[0] if found else "unknown"
    if version not in SUPPORTED_SCHEMAS:
        raise ParseError(
            f"rocpd schema version {version!r} is not supported (perfdash reads version "
            f"{', '.join(sorted(SUPPORTED_SCHEMAS))})",
            source=source,
            location="rocpd_metadata.schema_version",
        )
    return version


def _agents(conn: sqlite3.Connection, devices: Devices) -> dict[int, int]:
    """Agent row id -> logical index; GPUs become devices."""
    out: dict[int, int] = {}
    rows = conn.execute(
        "SELECT id, type, logical_index, name, model_name, product_name FROM rocpd_info_agent"
    )
    for agent_id, kind, logical, name, model, product in rows:
        index = logical if isinstance(logical, int) else agent_id
        out[agent_id] = index
        if kind == "GPU":
            devices.see(index, product or model or name or "", vendor="AMD", arch=name)
    return out


def _kernels(rows: Rows, agents: dict[int, int], devices: Devices) -> Iterator[Event]:
    for row in rows:
        (start, end, agent, queue, stream, pid, tid, name, display, dispatch, kernel_id,
         gx, gy, gz, wx, wy, wz, lds, scratch, vgpr, accum, sgpr, corr) = row  # fmt: skip
        device = agents.get(agent, agent)
        devices.see(device)
        args = kernel_args(
            (gx, gy, gz), (wx, wy, wz), queue=queue, hip_stream=stream, dispatch_id=dispatch,
            kernel_id=kernel_id, lds_bytes=lds, scratch_bytes=scratch, arch_vgpr=vgpr,
            accum_vgpr=accum, sgpr=sgpr,
        )  # fmt: skip
        label = str(display or name or "?")
        mark_communication(label, args)
        yield Event(
            kind=EventKind.KERNEL,
            name=label,
            start_ns=start,
            dur_ns=end - start,
            device=device,
            stream=queue,
            pid=pid,
            tid=tid,
            correlation=corr,
            args=args,
        )


def _copies(rows: Rows, agents: dict[int, int]) -> Iterator[Event]:
    for start, end, name, size, src, dst, stream, corr in rows:
        direction = str(name or "")
        device = agents.get(src if "DEVICE_TO" in direction else dst)
        args: dict[str, Any] = {"direction": direction, "bytes": size}
        yield Event(
            kind=EventKind.MEMCPY,
            name=copy_name(direction),
            start_ns=start,
            dur_ns=end - start,
            device=device,
            stream=stream,
            correlation=corr,
            args=args,
        )


def _regions(rows: Rows) -> Iterator[Event]:
    for start, end, name, category, pid, tid, corr in rows:
        domain, label = str(category or ""), str(name or "")
        args: dict[str, Any] = {"domain": domain}
        if domain.upper().startswith("RCCL"):
            args["library"] = "rccl"
            mark_communication(label, args, api=True)
        yield Event(
            kind=api_kind(domain),
            name=label,
            start_ns=start,
            dur_ns=end - start,
            pid=pid,
            tid=tid,
            correlation=corr,
            args=args,
        )


def _allocations(rows: Rows, agents: dict[int, int]) -> Iterator[Event]:
    for start, end, kind, level, size, address, agent, corr in rows:
        operation = str(kind or "").lower()
        yield Event(
            kind=EventKind.MEMORY,
            name=f"memory {operation}",
            start_ns=start,
            dur_ns=end - start,
            device=agents.get(agent),
            correlation=corr,
            args={
                "Bytes": -size if operation == "free" else size,
                "Addr": address,
                "operation": operation,
                "level": level,
            },
        )
