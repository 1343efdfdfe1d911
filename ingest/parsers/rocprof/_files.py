"""What each file of a rocprof output folder is, and which run it belongs to.

rocprof writes one run as several files with a shared prefix (rocprofv3:
``<prefix>_kernel_trace.csv``, default prefix the process id; v1: ``results.csv``,
``results.stats.csv``, ``results.json``). Files of two prefixes in one upload are two runs,
and merging them would invent a timeline, so that is refused naming one file of each.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path, PurePosixPath

from ingest._io import read_head
from ingest.errors import ParseError
from ingest.parsers.rocprof._csv import CsvError, read_header
from ingest.parsers.rocprof._databases import ROCPD, V1_DB, V1_DB_NOTE, database_kind
from ingest.parsers.rocprof._kinds import ANALYSIS_NOTE, Table, classify

SQLITE_MAGIC = b"SQLite format 3\x00"
V3_JSON_KEY = b'"rocprofiler-sdk-tool"'
_V1_JSON = re.compile(rb'^\{\s*"traceEvents"\s*:\s*\[\s*\{\s*\}')
_V3_DOMAINS = (
    "kernel_trace", "memory_copy_trace", "memory_allocation_trace", "hip_api_trace",
    "hsa_api_trace", "marker_api_trace", "rccl_api_trace", "scratch_memory_trace",
    "hip_runtime_trace", "hip_compile_trace", "counter_collection", "agent_info", "kernel_stats",
    "hip_api_stats", "hsa_api_stats", "memory_copy_stats", "marker_api_stats", "rccl_api_stats",
    "memory_allocation_stats", "scratch_memory_stats", "domain_stats", "results",
)  # fmt: skip
_V3_SUFFIX = re.compile(rf"^(?P<run>.+)_(?:{'|'.join(_V3_DOMAINS)})$")
_EXTENSIONS = (".gz", ".csv", ".json", ".db", ".sqlite", ".rocpd")
_V1_SUFFIXES = (".stats", ".hip_stats", ".hsa_stats", ".copy_stats", ".sysinfo")


class FileKind(StrEnum):
    """How a file of a rocprof folder is read."""

    CSV = "csv"
    V1_JSON = "v1_json"
    V3_JSON = "v3_json"
    ROCPD = "rocpd"
    SKIPPED = "skipped"  # rocprof output that is no trace, or repeats one (`RocFile.note`)
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class RocFile:
    """One input file: its name as the user knows it, where it is, and what it is."""

    name: str
    path: Path
    kind: FileKind
    table: Table | None = None
    header: tuple[str, ...] = ()
    note: str = ""  # why a SKIPPED file is not read

    @property
    def run(self) -> str:
        """The run this file belongs to: its folder plus its rocprof output prefix. A name
        without rocprof's ``<prefix>_<table>`` form (a renamed file, recognised by its
        content) names no run of its own: it belongs to its folder's.

        >>> RocFile("h/42/42_kernel_trace.csv", Path("x"), FileKind.CSV).run
        'h/42/42'
        >>> RocFile("out/results.stats.csv", Path("x"), FileKind.CSV).run
        'out/results'
        >>> RocFile("out/kernels.txt", Path("x"), FileKind.CSV, Table.V3_KERNELS).run
        'out'
        """
        pure = PurePosixPath(self.name)
        stem = pure.name
        for suffix in (*_EXTENSIONS, *_V1_SUFFIXES):
            stem = stem.removesuffix(suffix)
        m = _V3_SUFFIX.match(stem)
        if m:
            prefix = m.group("run")
        elif stem == "results" or self.kind is not FileKind.CSV or self.table is None:
            prefix = stem  # rocprof v1's results.* files, and JSON/rocpd files
        else:
            return str(pure.parent) if str(pure.parent) != "." else ""
        return str(pure.parent / prefix) if str(pure.parent) != "." else prefix


def looks_like_v1_json(head: bytes) -> bool:
    """rocprof v1's tblextr starts every trace with an empty event: ``{ "traceEvents":[{}``."""
    return bool(_V1_JSON.match(head.lstrip(b"\xef\xbb\xbf \t\r\n")))


def classify_file(name: str, path: Path) -> RocFile:
    """Look at a file's content (not its extension) and say what it is.

    Raises:
        ParseError: a CSV whose header is no rocprof table (file and line 1 named).
    """
    head = read_head(path, 4096)
    if head.startswith(SQLITE_MAGIC):
        kind = database_kind(path)
        if kind == V1_DB:
            return RocFile(name, path, FileKind.SKIPPED, note=V1_DB_NOTE)
        return RocFile(name, path, FileKind.ROCPD if kind == ROCPD else FileKind.OTHER)
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if stripped.startswith(b"{"):
        if V3_JSON_KEY in head:
            return RocFile(name, path, FileKind.V3_JSON)
        return RocFile(name, path, FileKind.V1_JSON if looks_like_v1_json(head) else FileKind.OTHER)
    is_csv_name = name.lower().removesuffix(".gz").endswith(".csv")
    first = stripped.split(b"\n", 1)[0]
    if is_csv_name or (first.count(b",") >= 2 and b"\0" not in first):
        # Content decides: a rocprof table renamed (or extracted without its extension) is
        # still read; only a file *named* .csv is an error when its header is unknown.
        header = read_header(path, name)
        table = classify(header) if header else None
        if table is Table.ANALYSIS:
            return RocFile(name, path, FileKind.SKIPPED, table, tuple(header), ANALYSIS_NOTE)
        if table is not None:
            return RocFile(name, path, FileKind.CSV, table, tuple(header))
        if is_csv_name:
            shown = ",".join(header)[:120] if header else "nothing"
            raise CsvError(
                f"unknown CSV header: no rocprof table starts with {shown!r}",
                source=name,
                location="line 1",
            )
    return RocFile(name, path, FileKind.OTHER)


def check_one_run(files: list[RocFile], source: str) -> str:
    """Return the run prefix shared by `files`, or refuse files from two runs.

    Raises:
        ParseError: two different prefixes/folders; names one file of each run.
    """
    runs: dict[str, RocFile] = {}
    for f in files:
        runs.setdefault(f.run, f)
    if len(runs) > 1:
        (run_a, a), (run_b, b) = list(runs.items())[:2]
        raise ParseError(
            f"the upload mixes files from different rocprof runs: {a.name} (run {run_a!r}) "
            f"and {b.name} (run {run_b!r}); upload one run's output folder at a time",
            source=source,
        )
    return next(iter(runs), "")
