"""Recognise a torch.profiler / Chrome-trace JSON file, for `ingest.detect`.

Two steps: the keys Kineto writes first (``schemaVersion``, ``deviceProperties``) or a bare
event array in the first kilobytes settle most files; a JSON object without them is read on,
within the 16 MB head that `_json_stream` already allows, for a top-level ``traceEvents``
array. Traces that open with a large ``metadata`` object (TraceLens's benchmark traces put
``traceEvents`` 26 KB in) are so recognised by their structure, not refused.

Public surface: `sniff`, `looks_like_kineto`.
"""

from __future__ import annotations

from pathlib import Path

from ingest._io import ByteStream
from ingest.errors import ParseError
from ingest.events import TraceFormat
from ingest.parsers._json_stream import HEAD_LIMIT, has_key_array

_KEYS = (b'"traceEvents"', b'"schemaVersion"', b'"deviceProperties"', b'"displayTimeUnit"')
_BLANK = b"\xef\xbb\xbf \t\r\n"


def looks_like_kineto(head: bytes) -> bool:
    """Whether the first bytes (decompressed) read as a torch.profiler / Chrome trace.

    >>> looks_like_kineto(b'{"schemaVersion": 1, "traceEvents": ['), looks_like_kineto(b"{}")
    (True, False)
    """
    stripped = head.lstrip(_BLANK)
    if stripped.startswith(b"{") and any(k in head for k in _KEYS):
        return True
    return stripped.startswith(b"[") and b'"ph"' in head and b'"ts"' in head  # bare array


def sniff(path: Path, head: bytes, source: str = "") -> TraceFormat | None:
    """`TraceFormat.KINETO` when the file is a Chrome-trace JSON document, else None."""
    if looks_like_kineto(head):
        return TraceFormat.KINETO
    if not head.lstrip(_BLANK).startswith(b"{"):
        return None
    stream = ByteStream(path, max_bytes=2 * HEAD_LIMIT, source=source or path.name)
    try:
        found = has_key_array(stream)
    except ParseError:
        return None  # a damaged gzip: not recognisably a trace from what could be read
    return TraceFormat.KINETO if found else None
