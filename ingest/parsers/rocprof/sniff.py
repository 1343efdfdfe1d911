"""Recognise a single rocprof file from its first kilobytes, for `ingest.detect`.

A CSV whose first line is data, not a header, is still recognised by rocprof's own values
(``"KERNEL_DISPATCH"``, ``HIP_RUNTIME_API``, ``[clone .kd]``) so that the parser can say
"unknown header at line 1" instead of "not a trace".
"""

from __future__ import annotations

import re
from pathlib import Path

from ingest.events import TraceFormat
from ingest.parsers.rocprof._csv import parse_header
from ingest.parsers.rocprof._files import SQLITE_MAGIC, V3_JSON_KEY, looks_like_v1_json
from ingest.parsers.rocprof._kinds import V3_TABLES, Table, classify
from ingest.parsers.rocprof.rocpd import is_rocpd

_ROCPROF_VALUES = re.compile(
    r'KERNEL_DISPATCH|MEMORY_COPY_|(?:HIP|HSA|MARKER|RCCL)_[A-Z_]*API|\.kd"|"Agent \d+"'
)
_FORMATS = {
    Table.DISPATCHES: TraceFormat.ROCPROF_CSV,
    Table.ROOFLINE: TraceFormat.ROCPROF_COMPUTE,
    Table.SYSINFO: TraceFormat.ROCPROF_COMPUTE,
}


def sniff_format(path: Path, head: bytes) -> TraceFormat | None:
    """The rocprof format of a file, or None when it is not rocprof output.

    `head` is the file's first bytes, decompressed.
    """
    if head.startswith(SQLITE_MAGIC):
        return TraceFormat.ROCPD_SQLITE if is_rocpd(path) else None
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
    return _FORMATS.get(table, TraceFormat.ROCPROF_CSV)
