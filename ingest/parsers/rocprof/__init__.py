"""AMD rocprof outputs: rocprof v1/v2 CSV and JSON, rocprofv3 CSV/JSON/rocpd, rocprof-compute.

Every entry point returns ``(TraceHeader, Iterator[Event])`` like the other parsers; a whole
output folder (or an extracted archive of one) becomes one trace.

Public surface: `FORMATS` (the formats this package reads), `parse_one` (one file of any
rocprof kind), `parse_folder`, `parse_files`, `parse_members` (the registry's archive hook),
`sniff`, `sniff_loose` (detection), `sniff_format`, `looks_like_v1_json`, `is_rocprof_folder`.
"""

from ingest.events import TraceFormat
from ingest.parsers.rocprof._files import looks_like_v1_json
from ingest.parsers.rocprof.folder import (
    is_rocprof_folder,
    parse_files,
    parse_folder,
    parse_members,
    parse_one,
)
from ingest.parsers.rocprof.sniff import sniff, sniff_format, sniff_loose

FORMATS = (
    TraceFormat.ROCPROF_CSV,
    TraceFormat.ROCPROF_JSON,
    TraceFormat.ROCPROFV3_CSV,
    TraceFormat.ROCPROFV3_JSON,
    TraceFormat.ROCPD_SQLITE,
    TraceFormat.ROCPROF_COMPUTE,
)

__all__ = [
    "FORMATS",
    "is_rocprof_folder",
    "looks_like_v1_json",
    "parse_files",
    "parse_folder",
    "parse_members",
    "parse_one",
    "sniff",
    "sniff_format",
    "sniff_loose",
]
