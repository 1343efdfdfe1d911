"""Apple Instruments Metal System Trace, as exported by ``xctrace export --xpath`` (XML).

One XML file holds one or more tables (``<node>``s); an archive of several such files (one
per table, as separate ``xctrace export`` runs write them) is one trace. GPU intervals become
kernels (blits: copies) on device 0, one lane per GPU channel; command-buffer commits become
runtime calls on their CPU thread, linked to their GPU intervals by command buffer (the
correlation); encoders become CPU ops; driver intervals, runtime calls.

Built from documentation and public exports, not from files recorded here: tables and
columns not listed in `_tables` are refused, not guessed at (docs/FORMATS.md, xctrace).

Public surface: `parse`, `parse_members`, `sniff`, `looks_like_export`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from ingest._io import ByteStream, read_head
from ingest.archive import ArchiveMember
from ingest.errors import ParseError
from ingest.events import Device, Event, ParseReport, TraceFormat, TraceHeader
from ingest.parsers.xctrace._mapping import Mapper
from ingest.parsers.xctrace._nesting import EncoderSpans
from ingest.parsers.xctrace._tables import ACCEPTED, GPU, RowView, check_columns
from ingest.parsers.xctrace._xml import ROOT, ExportReader, Table

_MARKERS = (b"<" + ROOT.encode(), b"<trace-toc")


def looks_like_export(head: bytes) -> bool:
    """Whether the first bytes are an xctrace export (or its --toc, refused with advice)."""
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    return stripped.startswith(b"<") and any(m in head for m in _MARKERS)


def sniff(path: Path, head: bytes, source: str = "") -> TraceFormat | None:
    """`ingest.detect`'s hook: `TraceFormat.XCTRACE_XML` for an export, else None."""
    return TraceFormat.XCTRACE_XML if looks_like_export(head) else None


def parse(
    path: Path, report: ParseReport, *, max_bytes: int, source: str = ""
) -> tuple[TraceHeader, Iterator[Event]]:
    """Open one export; events stream as the file is read.

    Raises (while iterating):
        ParseError: see `ExportReader.rows` and `_tables.check_columns`.
    """
    return parse_files([(path, source or path.name)], report, max_bytes=max_bytes)


def parse_files(
    files: list[tuple[Path, str]], report: ParseReport, *, max_bytes: int
) -> tuple[TraceHeader, Iterator[Event]]:
    """Several exports of one recording (one table each, or several) as one trace."""
    header = TraceHeader(format=TraceFormat.XCTRACE_XML)
    header.metadata["profiler"] = "Instruments (xctrace export)"
    return header, _events(files, header, report, max_bytes=max_bytes)


def parse_members(
    root: Path,
    members: list[ArchiveMember],
    report: ParseReport,
    *,
    max_bytes: int,
    source: str,
) -> tuple[TraceHeader, Iterator[Event]]:
    """The registry's archive hook: every xctrace export in the archive, one trace."""
    files = []
    for member in sorted(members, key=lambda m: m.name):
        name = f"{source}:{member.name}"
        if looks_like_export(read_head(member.path)):
            files.append((member.path, name))
        else:
            report.warnings.append(f"{member.name}: not an xctrace export, ignored")
    return parse_files(files, report, max_bytes=max_bytes)


def _events(
    files: list[tuple[Path, str]], header: TraceHeader, report: ParseReport, *, max_bytes: int
) -> Iterator[Event]:
    mapper = Mapper()
    spans = EncoderSpans()
    seen: dict[str, str] = {}
    report.bytes_total = sum(p.stat().st_size for p, _ in files)
    done = 0
    for path, name in files:
        stream = ByteStream(path, max_bytes=max_bytes, source=name)
        reader = ExportReader(name, _acceptor(name, seen))
        indexes: dict[int, dict[str, int]] = {}
        for row in reader.rows(stream):
            table = row.table
            index = indexes.get(id(table))
            if index is None:
                index = indexes[id(table)] = check_columns(table, name)
            event = mapper.event(RowView(row, name, index))
            if table.schema == GPU:
                yield from spans.add(event)
            else:
                yield event
            report.bytes_done = done + stream.raw_done
        yield from spans.flush()
        done += stream.raw_total
        report.bytes_done = done
        _note_tables(header, reader.tables)
    if not header.metadata.get("tables"):
        raise ParseError("the export holds no table rows", source=files[0][1] if files else "")
    header.devices = [Device(0, mapper.gpu_name or "Apple GPU", {"vendor": "Apple"})]
    header.metadata["gpu_channels"] = {str(v): k for k, v in sorted(mapper.lanes_used.items())}
    header.metadata["command_buffers"] = len(mapper.command_buffers)


def _acceptor(source: str, seen: dict[str, str]) -> Callable[[str, int], None]:
    def accept(schema: str, line: int) -> None:
        if schema not in ACCEPTED:
            raise ParseError(
                f"table schema {schema!r} is not one perfdash reads; it reads "
                + ", ".join(ACCEPTED),
                source=source,
                location=f"line {line}",
            )
        if schema in seen:
            raise ParseError(
                f"table {schema} appears twice (also in {seen[schema]}); export each table once",
                source=source,
                location=f"line {line}",
            )
        seen[schema] = source

    return accept


def _note_tables(header: TraceHeader, tables: list[Table]) -> None:
    counts = header.metadata.setdefault("tables", {})
    for table in tables:
        counts[table.schema] = counts.get(table.schema, 0) + table.rows


__all__ = ["looks_like_export", "parse", "parse_files", "parse_members"]
