"""Pure trace parsing: files in, normalised events and a trace header out.

No database, web or queue imports live here, so the parsers run anywhere, including
`perfdash ingest FILE` with no server.

Public surface: `parse_file`, `ParsedTrace`, `Event`, `EventKind`, `TraceFormat`,
`TraceHeader`, `Device`, `ParseReport`, `TraceStats`, `KernelStat`, the errors, and
`SCHEMA_VERSION` / `PARSER_VERSION`.
"""

from ingest.errors import DiskFullError, IngestError, ParseError, UnsupportedFormatError
from ingest.events import (
    SCHEMA_VERSION,
    Device,
    Event,
    EventKind,
    ParseReport,
    TraceFormat,
    TraceHeader,
)
from ingest.registry import PARSER_VERSION, SUPPORTED_FORMATS, ParsedTrace, parse_file
from ingest.stats import KernelStat, TraceStats

__all__ = [
    "PARSER_VERSION",
    "SCHEMA_VERSION",
    "SUPPORTED_FORMATS",
    "Device",
    "DiskFullError",
    "Event",
    "EventKind",
    "IngestError",
    "KernelStat",
    "ParseError",
    "ParseReport",
    "ParsedTrace",
    "TraceFormat",
    "TraceHeader",
    "TraceStats",
    "UnsupportedFormatError",
    "parse_file",
]
