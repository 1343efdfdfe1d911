"""The one list of formats perfdash can read, and the entry point that reads any of them.

Public surface: `parse_file`, `ParsedTrace`, `SUPPORTED_FORMATS`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from ingest._io import DEFAULT_MAX_DECOMPRESSED
from ingest.archive import ArchiveMember, extracted, is_archive
from ingest.detect import UNRECOGNISED, detect_trace_format
from ingest.errors import ParseError, UnsupportedFormatError
from ingest.events import Event, EventBlock, ParseReport, TraceFormat, TraceHeader, flatten
from ingest.memsnap import build_views
from ingest.multirank import RankFile, merge_ranks
from ingest.parsers import kineto, ncu, nsys, rocprof, torch_memsnap, xctrace
from ingest.tools import ExternalTools

PARSER_VERSION = "3"
Items = Iterator[Event | EventBlock]
Parser = Callable[..., tuple[TraceHeader, Items]]
PARSERS: dict[TraceFormat, Parser] = {
    TraceFormat.KINETO: kineto.parse,
    TraceFormat.NSYS_SQLITE: nsys.parse,
    TraceFormat.NCU_CSV: ncu.parse,
    **dict.fromkeys(rocprof.FORMATS, rocprof.parse_one),
    TraceFormat.TORCH_MEMORY_SNAPSHOT: torch_memsnap.parse,
    TraceFormat.XCTRACE_XML: xctrace.parse,
}
# Formats whose binary reports need a vendor tool: their parsers take `tools=ExternalTools`.
TOOL_FORMATS = frozenset({TraceFormat.NSYS_SQLITE, TraceFormat.NCU_CSV})
# Formats whose output is a folder of files read together (an archive of one is one trace):
# `parser(folder, members, report, *, max_bytes, source)`.
FolderParser = Callable[..., tuple[TraceHeader, Items]]
FOLDER_PARSERS: dict[TraceFormat, FolderParser] = {
    **dict.fromkeys(rocprof.FORMATS, rocprof.parse_members),
    TraceFormat.XCTRACE_XML: xctrace.parse_members,
}
# Formats whose files are ranks of one job: an archive of several is one multi-rank trace.
RANKED_FORMATS = frozenset({TraceFormat.KINETO})
SUPPORTED_FORMATS = tuple(PARSERS)
ARCHIVE_MAX_FILES = 4096


@dataclass
class ParsedTrace:
    """A detected, opened trace; `report` fills as it runs.

    Read it once, through either `events` (one `Event` at a time) or `items` (the parser's
    own stream, where a large table may come as `EventBlock` columns: the ingest's path).
    `close()` (or `with`) frees what the parse holds on disk, such as an archive's extracted
    folder, also when the events were never read.
    """

    header: TraceHeader
    items: Items
    report: ParseReport = field(default_factory=ParseReport)
    events: Iterator[Event] = field(init=False)
    scratch: ExitStack = field(default_factory=ExitStack)

    def __post_init__(self) -> None:
        self.events = flatten(self.items)

    def close(self) -> None:
        """Stop reading and remove the parse's scratch files (idempotent)."""
        close = getattr(self.items, "close", None)
        if close is not None:
            close()
        self.scratch.close()

    def __enter__(self) -> ParsedTrace:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def parse_file(
    path: Path,
    *,
    max_bytes: int = DEFAULT_MAX_DECOMPRESSED,
    source: str = "",
    tools: ExternalTools | None = None,
    scratch_bytes: int | None = None,
) -> ParsedTrace:
    """Detect the format of `path` and start parsing it.

    Args:
        path: the file to read.
        max_bytes: cap on the decompressed size.
        scratch_bytes: cap on the disk an archive's extracted files take (default
            `max_bytes`).
        source: the name the user knows the file by (errors quote it); default `path.name`.
        tools: vendor tools (nsys, ncu) that turn binary reports into readable files.

    Raises:
        UnsupportedFormatError: unknown format, or a known one perfdash cannot read yet.
        ParseError: the file is malformed.
        DiskFullError: the scratch disk filled while extracting an archive.
    """
    source = source or path.name
    report = ParseReport()
    if is_archive(path):
        scratch = max_bytes if scratch_bytes is None else scratch_bytes
        return _parse_archive(path, report, max_bytes=max_bytes, scratch=scratch, source=source)
    header, events = _open(path, report, max_bytes=max_bytes, source=source, tools=tools)
    return ParsedTrace(header=header, items=events, report=report)


def _open(
    path: Path,
    report: ParseReport,
    *,
    max_bytes: int,
    source: str,
    tools: ExternalTools | None = None,
) -> tuple[TraceHeader, Items]:
    fmt = detect_trace_format(path, source)
    parser = PARSERS.get(fmt)
    if parser is None:
        raise UnsupportedFormatError(
            f"{source}: detected {fmt.value}, which this version of perfdash cannot read yet; "
            f"supported: {', '.join(f.value for f in SUPPORTED_FORMATS)}"
        )
    extra = {"tools": tools} if fmt in TOOL_FORMATS else {}
    header, events = parser(path, report, max_bytes=max_bytes, source=source, **extra)
    if header.rank is not None:
        return header, _stamp_rank(events, header.rank)
    return header, events


def _stamp_rank(items: Items, rank: int) -> Items:
    for item in items:
        if isinstance(item, EventBlock):
            item.rank = [rank] * len(item)  # the block stays columns
        else:
            item.rank = rank
        yield item


def _parse_archive(
    path: Path, report: ParseReport, *, max_bytes: int, scratch: int, source: str
) -> ParsedTrace:
    """An archive is one trace: the rank files of one job, or one tool's output folder.

    The extracted folder lives until the event iterator is exhausted, fails or is closed, or
    the `ParsedTrace` is closed.
    """
    stack = ExitStack()
    try:
        members = stack.enter_context(
            extracted(
                path,
                source=source,
                max_total_bytes=scratch,
                max_file_bytes=max_bytes,
                max_files=ARCHIVE_MAX_FILES,
            )
        )
        header, events = _parse_members(members, report, max_bytes=max_bytes, source=source)
    except BaseException:
        stack.close()
        raise
    return ParsedTrace(header=header, items=_closing(events, stack), report=report, scratch=stack)


def _parse_members(
    members: list[ArchiveMember], report: ParseReport, *, max_bytes: int, source: str
) -> tuple[TraceHeader, Items]:
    by_format: dict[TraceFormat, list[ArchiveMember]] = {}
    unknown: list[str] = []
    for member in members:
        name = f"{source}:{member.name}"
        try:
            fmt = detect_trace_format(member.path, name)
        except UnsupportedFormatError as e:
            reason = str(e).removeprefix(f"{name}: ")
            if reason.startswith(UNRECOGNISED):
                unknown.append(member.name)
            elif len(report.warnings) < report.max_warnings:
                report.warnings.append(f"{member.name}: not a trace, ignored ({reason[:160]})")
            continue
        by_format.setdefault(fmt, []).append(member)
    if unknown:  # one line for them all, so the parser's own warnings still fit
        more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        shown = ", ".join(unknown[:5]) + more
        report.warnings.append(f"{len(unknown)} file(s) are not traces, ignored: {shown}")
    if not by_format:
        raise ParseError("the archive holds no trace file perfdash recognises", source=source)
    snapshots = by_format.pop(TraceFormat.TORCH_MEMORY_SNAPSHOT, [])
    if not by_format:  # snapshots alone: one is a trace of its own
        by_format[TraceFormat.TORCH_MEMORY_SNAPSHOT] = snapshots
    elif snapshots:
        header, events = _parse_by_format(members, by_format, report, max_bytes, source)
        events = attach_snapshot(header, events, snapshots, max_bytes=max_bytes, source=source)
        return header, events
    return _parse_by_format(members, by_format, report, max_bytes, source)


def attach_snapshot(
    header: TraceHeader,
    events: Items,
    snapshots: list[ArchiveMember],
    *,
    max_bytes: int,
    source: str,
) -> Items:
    """A memory snapshot uploaded with a profiler trace of the same run shows on that
    trace: its views ride on the trace's header (one snapshot per trace). A snapshot
    without phase annotations takes the trace's record_function ranges, so the events
    come back wrapped."""
    if len(snapshots) > 1:
        names = ", ".join(m.name for m in snapshots)
        raise ParseError(
            f"the archive holds {len(snapshots)} memory snapshots ({names}); "
            "upload one snapshot with its trace",
            source=source,
        )
    (member,) = snapshots
    name = f"{source}:{member.name}"
    snap = torch_memsnap.read_snapshot(member.path, max_bytes=max_bytes, source=name)
    header.memory_snapshot = views = build_views(snap)
    header.metadata["memory_snapshot"] = {"file": member.name}
    if snap.annotations:
        return events
    return torch_memsnap.phases_from_trace(events, snap, views)


def _parse_by_format(
    members: list[ArchiveMember],
    by_format: dict[TraceFormat, list[ArchiveMember]],
    report: ParseReport,
    max_bytes: int,
    source: str,
) -> tuple[TraceHeader, Items]:
    for fmt, folder_parser in FOLDER_PARSERS.items():
        if fmt in by_format:
            root = members[0].path.parents[len(Path(members[0].name).parts) - 1]
            return folder_parser(root, members, report, max_bytes=max_bytes, source=source)
    if len(by_format) > 1:
        kinds = ", ".join(f"{len(m)} {f.value}" for f, m in by_format.items())
        raise ParseError(
            f"the archive mixes trace formats ({kinds}); upload one run", source=source
        )
    ((fmt, files),) = by_format.items()
    if len(files) == 1:
        only = files[0]
        return _open(only.path, report, max_bytes=max_bytes, source=f"{source}:{only.name}")
    if fmt not in RANKED_FORMATS:
        raise ParseError(
            f"the archive holds {len(files)} {fmt.value} files; upload one at a time",
            source=source,
        )

    def open_rank(p: Path, sub: ParseReport, name: str) -> tuple[TraceHeader, Items]:
        return _open(p, sub, max_bytes=max_bytes, source=name)

    ranks = [RankFile(m.name, m.path) for m in files]
    return merge_ranks(ranks, report, open_rank, source)


def _closing(events: Items, stack: ExitStack) -> Items:
    with stack:
        yield from events
