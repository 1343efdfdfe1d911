"""Recognise a single rocprof file from its first kilobytes, for `ingest.detect`.

A CSV whose first line is data, not a header, is still recognised by rocprof's own values
(``"KERNEL_DISPATCH"``, ``HIP_RUNTIME_API``, ``[clone .kd]``) so that the parser can say
"unknown header at line 1" instead of "not a trace". rocprof output that is no trace (a v1
``results.db``, a rocprof-compute analysis table) is named as such instead.

Public surface: `sniff`, `sniff_loose`, `sniff_format`.
"""

from __future__ import annotations

import re
from pathlib import Path

from ingest.errors import UnsupportedFormatError
from ingest.events import TraceFormat
from ingest.parsers.rocprof._csv import parse_header
from ingest.parsers.rocprof._databases import ROCPD, V1_DB, V1_DB_NOTE, database_kind
from ingest.parsers.rocprof._files import SQLITE_MAGIC, V3_JSON_KEY, looks_like_v1_json
from ingest.parsers.rocprof._kinds import ANALYSIS_NOTE, V3_TABLES, Table, classify

_ROCPROF_VALUES = re.compile(
    r'KERNEL_DISPATCH|MEMORY_COPY_|(?:HIP|HSA|MARKER|RCCL)_[A-Z_]*API|\.kd"|"Agent \d+"'
)
_FORMATS = {
    Table.DISPATCHES: TraceFormat.ROCPROF_CSV,
    Table.ROOFLINE: TraceFormat.ROCPROF_COMPUTE,
    Table.SYSINFO: TraceFormat.ROCPROF_COMPUTE,
}


def sniff(path: Path, head: bytes, source: str = "") -> TraceFormat | None:
    """`ingest.detect`'s hook: `sniff_format`, refusing rocprof output that is no trace.

    Raises:
        UnsupportedFormatError: a rocprof v1 ``results.db`` or a rocprof-compute analysis
            table; the message says which and what to upload instead.
    """
    name = source or path.name
    if head.startswith(SQLITE_MAGIC) and database_kind(path) == V1_DB:
        raise UnsupportedFormatError(f"{name}: {V1_DB_NOTE}")
    fmt = sniff_format(path, head)
    if fmt is TraceFormat.ROCPROF_COMPUTE and _table(head, path) is Table.ANALYSIS:
        raise UnsupportedFormatError(
            f"{name}: {ANALYSIS_NOTE.removesuffix(': skipped')}; upload the whole workload folder"
        )
    return fmt


def sniff_loose(path: Path, head: bytes, source: str = "") -> TraceFormat | None:
    """Last resort, after every other format: a CSV whose first line names rocprof's kernel
    column (``KernelName``/``Kernel_Name``), so the parser explains what else is wrong."""
    lines = head.lstrip(b"\xef\xbb\xbf \t\r\n").decode("utf-8", errors="replace").splitlines()
    first = lines[0] if lines else ""
    return TraceFormat.ROCPROF_CSV if "KernelName" in first or "Kernel_Name" in first else None


def _table(head: bytes, path: Path) -> Table | None:
    first = head.lstrip(b"\xef\xbb\xbf \t\r\n").decode("utf-8", errors="replace")
    return classify(parse_header(first.split("\n", 1)[0], path.name))


def sniff_format(path: Path, head: bytes) -> TraceFormat | None:
    """The rocprof format of a file, or None when it is not rocprof output.

    `head` is the file's first bytes, decompressed.
    """
    if head.startswith(SQLITE_MAGIC):
        return TraceFormat.ROCPD_SQLITE if database_kind(path) == ROCPD else None
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if stripped.startswith(b"{"):
        if V3_JSON_KEY in head:
            return TraceFormat.ROCPROFV3_JSON
        return TraceFormat.ROCPROF_JSON if looks_like_v1_json(head) else None
    first = stripped.decode("utf-8", errors="replace").split("\n", 1)[0]
    if first.count(",") < 2:
        return None
    table = classify(parse_header(first, path.name))
    if table is None:
        return TraceFormat.ROCPROF_CSV if _ROCPROF_VALUES.search(first) else None
    if table in V3_TABLES or (table is Table.STATS and "MinNs" in first):
        return TraceFormat.ROCPROFV3_CSV
    if table is Table.ANALYSIS:
        return TraceFormat.ROCPROF_COMPUTE
    return _FORMATS.get(table, TraceFormat.ROCPROF_CSV)
