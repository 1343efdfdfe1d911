"""The one list of formats perfdash can read, and the entry point that reads any of them.

Public surface: `parse_file`, `ParsedTrace`, `SUPPORTED_FORMATS`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ingest._io import DEFAULT_MAX_DECOMPRESSED
from ingest.detect import detect_format
from ingest.errors import UnsupportedFormatError
from ingest.events import Event, ParseReport, TraceFormat, TraceMeta
from ingest.parsers import kineto, ncu, nsys, rocprof
from ingest.tools import ExternalTools

PARSER_VERSION = "1"
Parser = Callable[..., tuple[TraceMeta, Iterator[Event]]]
PARSERS: dict[TraceFormat, Parser] = {
    TraceFormat.KINETO: kineto.parse,
    TraceFormat.NSYS_SQLITE: nsys.parse,
    TraceFormat.NCU_CSV: ncu.parse,
    **dict.fromkeys(rocprof.FORMATS, rocprof.parse_one),
}
# Formats whose binary reports need a vendor tool: their parsers take `tools=ExternalTools`.
TOOL_FORMATS = frozenset({TraceFormat.NSYS_SQLITE, TraceFormat.NCU_CSV})
SUPPORTED_FORMATS = tuple(PARSERS)


@dataclass
class ParsedTrace:
    """A detected, opened trace. `events` is a one-shot iterator; `report` fills as it runs."""

    meta: TraceMeta
    events: Iterator[Event]
    report: ParseReport = field(default_factory=ParseReport)


def parse_file(
    path: Path,
    *,
    max_bytes: int = DEFAULT_MAX_DECOMPRESSED,
    source: str = "",
    tools: ExternalTools | None = None,
) -> ParsedTrace:
    """Detect the format of `path` and start parsing it.

    Args:
        path: the file to read.
        max_bytes: cap on the decompressed size.
        source: the name the user knows the file by (errors quote it); default `path.name`.
        tools: vendor tools (nsys, ncu) that turn binary reports into readable files.

    Raises:
        UnsupportedFormatError: unknown format, or a known one perfdash cannot read yet.
        ParseError: the file is malformed.
    """
    source = source or path.name
    fmt = detect_format(path, source)
    parser = PARSERS.get(fmt)
    if parser is None:
        raise UnsupportedFormatError(
            f"{source}: detected {fmt.value}, which this version of perfdash cannot read yet; "
            f"supported: {', '.join(f.value for f in SUPPORTED_FORMATS)}"
        )
    report = ParseReport()
    extra = {"tools": tools} if fmt in TOOL_FORMATS else {}
    meta, events = parser(path, report, max_bytes=max_bytes, source=source, **extra)
    return ParsedTrace(meta=meta, events=events, report=report)
