"""rocprofv2 file-plugin CSVs other than kernel dispatches (FORMATS.md §4.2).

API traces (``Domain,Function,Start_Timestamp,End_Timestamp,Correlation_ID``), roctx marks
(``Domain,ROCTX_ID,Message,Timestamp``) and async copies (note ``Stop_Timestamp``). Kernel
dispatch CSVs share the v1 reader (`dispatch_csv`). v2 records no process or thread ids.
"""

from __future__ import annotations

from collections.abc import Iterator

from ingest.events import Event, EventKind, ParseReport
from ingest.parsers.rocprof._common import MEMCPY_NO_BYTES, api_kind, copy_name, warn
from ingest.parsers.rocprof._csv import CsvTable, Row


def _span(row: Row, end_column: str) -> tuple[int, int]:
    start, end = row.req_int("Start_Timestamp"), row.req_int(end_column)
    if end < start:
        raise row.error(f"record ends before it starts ({start} > {end})")
    return start, end - start


def iter_api(table: CsvTable) -> Iterator[Event]:
    """Runtime calls (and roctx ranges, when the domain says so)."""
    table.require(("Function", "Start_Timestamp", "End_Timestamp"), "rocprofv2 API trace")
    for row in table.rows():
        start, dur = _span(row, "End_Timestamp")
        domain = row.text("Domain")
        yield Event(
            kind=api_kind(domain),
            name=row.text("Function"),
            start_ns=start,
            dur_ns=dur,
            correlation=row.opt_int("Correlation_ID"),
            args={"domain": domain},
        )


def iter_roctx(table: CsvTable) -> Iterator[Event]:
    """roctx marks as zero-length annotations."""
    table.require(("Message", "Timestamp"), "rocprofv2 roctx trace")
    for row in table.rows():
        yield Event(
            kind=EventKind.ANNOTATION,
            name=row.text("Message"),
            start_ns=row.req_int("Timestamp"),
            dur_ns=0,
            args={"domain": row.text("Domain"), "roctx_id": row.opt_int("ROCTX_ID")},
        )


def iter_async(table: CsvTable, report: ParseReport) -> Iterator[Event]:
    """Async copies (no byte count in this CSV either); other async operations are left out."""
    table.require(("Operation", "Start_Timestamp", "Stop_Timestamp"), "rocprofv2 async trace")
    warn(report, f"{table.source}: {MEMCPY_NO_BYTES}")
    for row in table.rows():
        operation = row.text("Operation")
        if "COPY" not in operation.upper():
            continue
        start, dur = _span(row, "Stop_Timestamp")
        yield Event(
            kind=EventKind.MEMCPY,
            name=copy_name(operation),
            start_ns=start,
            dur_ns=dur,
            correlation=row.opt_int("Correlation_ID"),
            args={"direction": operation},
        )
