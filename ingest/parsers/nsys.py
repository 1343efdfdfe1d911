"""Nsight Systems: ``nsys export --type sqlite`` files (schemas 2.x and 3.x, nsys 2021-2025).

What is read (FORMATS.md §2): kernels (demangled name as the event name, as
``nsys stats --report cuda_gpu_kern_sum`` groups them; short name, grid, block, registers,
static and dynamic shared memory, context and graph node id in args), memcpy (kind, bytes,
pinned/pageable ends, bandwidth), memset, synchronisations, CUDA runtime and driver calls
(backtrace duplicates dropped), NVTX ranges with their domains, CUDA graph node creation,
and the GPUs (``TARGET_INFO_GPU``, by CUDA ordinal, ``peak_dram_bytes_per_s`` from
``memoryBandwidth``). Times stay on the session's timeline (ns from capture start); the
wall-clock start is ``metadata["session_start_utc_ns"]``.

The upload is opened read-only and never modified, through sqlite3 and, for the large tables,
ADBC's SQLite driver (`ingest.parsers._sqlite`). ``TARGET_INFO_SYSTEM_ENV`` and
``META_DATA_CAPTURE`` (environment variables) are never read. An ``.nsys-rep`` is exported
to sqlite first when the worker has ``nsys`` (`ingest.tools.ExternalTools`); otherwise the
error gives the command.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

from adbc_driver_manager import Error as AdbcError

from ingest.errors import ParseError, UnsupportedFormatError
from ingest.events import Event, EventBlock, ParseReport, TraceFormat, TraceHeader
from ingest.parsers import _nsys_arrow as arrow
from ingest.parsers import _nsys_events as tables
from ingest.parsers import _nsys_schema as schema
from ingest.parsers._sqlite import TextBudget, check_tables, open_arrow
from ingest.tools import (
    ExternalTools,
    export_nsys_sqlite,
    is_nsys_report,
    readable_file,
    remove_workdir,
)

_PROGRESS_MASK = (1 << 16) - 1  # update progress every 65,536 rows
_Reader = Callable[[arrow.Source, set[str]], Iterator[Event | EventBlock]]
# The large tables as Arrow batches (`_nsys_arrow`), the small one row by row.
READERS: dict[str, _Reader] = {
    tables.KERNEL: arrow.kernels,
    tables.MEMCPY: arrow.memcpys,
    tables.MEMSET: arrow.memsets,
    tables.SYNC: arrow.syncs,
    tables.RUNTIME: arrow.runtime_calls,
    tables.NVTX: arrow.nvtx_ranges,
    tables.GRAPH_NODES: lambda src, cols: tables.graph_nodes(src.conn, cols),
}


_SQLITE_MAGIC = b"SQLite format 3\x00"


def sniff(path: Path, head: bytes, source: str = "") -> TraceFormat | None:
    """`ingest.detect`'s hook, after rocprof's: any other SQLite file (the parser names the
    tables an export lacks), or an ``.nsys-rep``/``.qdrep`` by magic or name."""
    if head.startswith(_SQLITE_MAGIC) or is_nsys_report(head, source or path.name):
        return TraceFormat.NSYS_SQLITE
    return None


def parse(
    path: Path,
    report: ParseReport,
    *,
    max_bytes: int,
    source: str,
    tools: ExternalTools | None = None,
) -> tuple[TraceHeader, Iterator[Event | EventBlock]]:
    """Read an Nsight Systems sqlite export (or an ``.nsys-rep``, through ``nsys export``).

    Args:
        path: the sqlite file or report.
        report: receives skipped-row counts and warnings.
        max_bytes: cap on the text read out of the database (names joined from
            ``StringIds``, counted once per row that uses them).
        source: the file name shown in errors.
        tools: where the worker's ``nsys`` is, for ``.nsys-rep`` uploads.

    Returns:
        The trace header and an iterator over normalised events (the runtime and driver
        calls, kernels, copies, memsets, syncs and NVTX ranges, read through ADBC into Arrow
        (`ingest.parsers._nsys_arrow`), as `EventBlock` columns).

    Raises:
        UnsupportedFormatError: not an nsys export (the message names the missing tables),
            an unknown schema, or an ``.nsys-rep`` with no ``nsys`` configured.
        ParseError: the sqlite file is locked, truncated or corrupt, computes what it should
            store (`ingest.parsers._sqlite.check_tables`), or holds more text than `max_bytes`.
    """
    path, workdir = readable_file(path, source, tools, is_nsys_report, export_nsys_sqlite)
    try:
        conn = schema.open_readonly(path, source)
        header, plan = _prepare(conn, source, report)
    except BaseException:
        remove_workdir(workdir)
        raise
    report.bytes_total = path.stat().st_size
    return header, _events(path, conn, plan, report, source, workdir, max_bytes)


def _prepare(
    conn: sqlite3.Connection, source: str, report: ParseReport
) -> tuple[TraceHeader, list[tuple[str, set[str]]]]:
    """Check the schema and read the metadata; return which tables to read, with columns."""
    try:
        present = schema.tables(conn)
        meta_table = schema.check_export(present, source)
        header = TraceHeader(format=TraceFormat.NSYS_SQLITE)
        if meta_table is None:
            tables.warn(report, schema.NO_METADATA)
        else:
            header.metadata = dict(schema.read_metadata(conn, meta_table, source))
        start = schema.session_start_ns(conn, present)
        if start is not None:
            header.metadata["session_start_utc_ns"] = start
        header.devices = schema.read_devices(conn, present)
        plan = [(t, schema.columns(conn, t)) for t in READERS if t in present]
        check_tables(conn, [*schema.READ_TABLES, *READERS], source)
    except (sqlite3.Error, UnicodeDecodeError) as e:  # corrupt TEXT is not UTF-8
        conn.close()
        raise schema.sqlite_error(e, source, "reading the export's schema") from e
    except BaseException:
        conn.close()
        raise
    for table, cols in plan:
        missing = [c for c in tables.REQUIRED_COLUMNS[table] if c not in cols]
        if table == tables.KERNEL and not {"demangledName", "shortName"} & cols:
            missing.append("demangledName or shortName")
        if missing:
            conn.close()
            raise UnsupportedFormatError(
                f"{source}: Nsight Systems table {table} has an unknown schema: missing "
                f"column(s) {', '.join(missing)}"
            )
    if not plan:
        tables.warn(report, "the export holds no CUDA or NVTX activity tables")
    return header, plan


def _events(
    path: Path,
    conn: sqlite3.Connection,
    plan: list[tuple[str, set[str]]],
    report: ParseReport,
    source: str,
    workdir: Path | None,
    max_bytes: int,
) -> Iterator[Event | EventBlock]:
    """Stream every table in turn; sqlite errors mid-way become a ParseError naming the table.

    Progress (`report.bytes_done`) is the file size times the share of rows read so far.
    The text the events took from the database stops at `max_bytes` (`TextBudget`).
    """
    aconn = None
    try:
        table = "the row counts"
        try:
            rows = {t: conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t, _ in plan}
            total, done = sum(rows.values()) or 1, 0
            budget = TextBudget(max_bytes, source)
            table = "the database (through ADBC)"
            aconn = open_arrow(path, timeout=schema.LOCK_TIMEOUT_S)
            src = arrow.Source(conn, aconn, arrow.Strings(conn), report, budget)
            for table, cols in plan:
                i = 0
                for item in READERS[table](src, cols):
                    if isinstance(item, EventBlock):
                        report.bytes_done = report.bytes_total * (done + i) // total
                        i += len(item)
                    else:
                        if not i & _PROGRESS_MASK:
                            report.bytes_done = report.bytes_total * (done + i) // total
                        i += 1
                    budget.take(item, table)
                    yield item
                done += rows[table]
        except (sqlite3.Error, UnicodeDecodeError, arrow.Unreadable, AdbcError) as e:
            # corrupt TEXT is not UTF-8
            raise schema.sqlite_error(e, source, f"reading {table}") from e
        except ParseError:
            raise
        except (TypeError, ValueError) as e:  # a damaged row decodes to values of the wrong type
            raise ParseError(
                f"the sqlite file is corrupt: a row of {table} holds values of the wrong type "
                f"({e})",
                source=source,
            ) from e
        report.bytes_done = report.bytes_total
    finally:
        if aconn is not None:
            aconn.close()
        conn.close()
        remove_workdir(workdir)
