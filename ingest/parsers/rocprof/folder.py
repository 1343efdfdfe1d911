"""A rocprof output folder (or one file of it) -> ONE trace.

Files are recognised by content, checked to come from one run, and read in an order that lets
later tables use earlier ones: agents (devices) and counters first, then dispatches, copies,
API calls. When a run was written in several formats, one is read: rocpd, else the rocprofv3
JSON, else the CSVs (a v1 ``results.json`` beside ``results.csv`` adds only its non-kernel
events). A rocprof-compute workload reads ``pmc_perf.csv`` (or ``timestamps.csv``) with the
peaks of ``roofline.csv`` and the GPU facts of ``sysinfo.csv``.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Iterator, Sequence
from itertools import accumulate
from pathlib import Path
from typing import Any

from ingest.errors import ParseError, UnsupportedFormatError
from ingest.events import Event, EventBlock, ParseReport, TraceFormat, TraceHeader, flatten
from ingest.parsers.rocprof import compute, rocpd, stats_csv, v1_json, v2_csv, v3_csv, v3_json
from ingest.parsers.rocprof._common import BOOTTIME, Devices, warn
from ingest.parsers.rocprof._csv import CsvTable, open_table
from ingest.parsers.rocprof._files import FileKind, RocFile, check_one_run, classify_file
from ingest.parsers.rocprof._kinds import V2_TABLES, V3_TABLES, Table
from ingest.parsers.rocprof.dispatch_csv import iter_dispatches

NO_ACTIVITY = "no activity: the trace has no kernels, copies, API calls or markers"
STATS_ONLY = (
    "kept in the trace metadata; per-dispatch events come from results.csv or *_kernel_trace.csv"
)
_COMPUTE_NAMES = ("pmc_perf.csv", "timestamps.csv")
# Files of one run overlap in time; ranges further apart than this are different runs, or
# different clocks (a rocprofv3 SDK 0.5 kernel trace and a copy trace of another session
# are 102 days apart on their BOOTTIME clocks, which would make an 8.8-million-second trace).
MAX_GAP_NS = 3600 * 10**9
Item = Event | EventBlock


def head(block: EventBlock, n: int) -> EventBlock:
    """The first `n` rows of a block."""

    def cut(column: Sequence[Any] | None) -> Sequence[Any] | None:
        return None if column is None else column[:n]

    return EventBlock(
        block.kind, block.name[:n], block.start_ns[:n], block.dur_ns[:n], cut(block.device),
        cut(block.stream), cut(block.pid), cut(block.tid), cut(block.correlation),
        cut(block.args), cut(block.rank),
    )  # fmt: skip


class _Clock:
    """Each file's time range, checked against the files read before it."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.ranges: list[tuple[str, int, int]] = []

    def watch(self, name: str, events: Iterable[Item]) -> Iterator[Item]:
        """Yield `events`; refuse the file once it strays from the earlier files' span
        (a block is cut before its first event that strays, and that event refused)."""
        lo: int | None = None
        hi: int | None = None
        for item in events:
            if isinstance(item, EventBlock):
                lo, hi = yield from self._watch_block(name, item, lo, hi)
                continue
            end = item.start_ns + item.dur_ns
            lo = item.start_ns if lo is None else min(lo, item.start_ns)
            hi = end if hi is None else max(hi, end)
            self._check(name, lo, hi)
            yield item
        if lo is not None and hi is not None:
            self.ranges.append((name, lo, hi))

    def _watch_block(
        self, name: str, block: EventBlock, lo: int | None, hi: int | None
    ) -> Generator[EventBlock, None, tuple[int, int]]:
        starts = list(block.start_ns)
        ends = [s + d for s, d in zip(starts, block.dur_ns, strict=True)]
        los = list(accumulate(starts if lo is None else [lo, *starts], min))[-len(starts) :]
        his = list(accumulate(ends if hi is None else [hi, *ends], max))[-len(ends) :]
        bad = next(
            (i for i, (x, y) in enumerate(zip(los, his, strict=True))
             if any(max(a - y, x - b) > MAX_GAP_NS for _, a, b in self.ranges)),
            None,
        )  # fmt: skip
        if bad is not None:
            if bad:
                yield head(block, bad)
            self._check(name, los[bad], his[bad])
        yield block
        return los[-1], his[-1]

    def _check(self, name: str, lo: int, hi: int) -> None:
        for other, a, b in self.ranges:
            gap = max(a - hi, lo - b)
            if gap > MAX_GAP_NS:
                raise ParseError(
                    f"{name} ({_seconds(lo)}..{_seconds(hi)} s) and {other} "
                    f"({_seconds(a)}..{_seconds(b)} s) are {gap / 1e9:,.0f} s apart: "
                    "files of one rocprof run overlap in time, so these are different runs "
                    "or different clocks; upload one run's output folder at a time",
                    source=self.source,
                )


def _seconds(ns: int) -> str:
    return f"{ns / 1e9:,.3f}"


class _Run:
    """State shared while one run's files are read."""

    def __init__(self, files: list[RocFile], report: ParseReport, max_bytes: int, source: str):
        self.files = files
        self.report = report
        self.max_bytes = max_bytes
        self.source = source
        self.devices = Devices()
        self.skipped: list[str] = []  # files recognised but not read (`RocFile.note`)
        self.header = TraceHeader(format=TraceFormat.ROCPROFV3_CSV, metadata=dict(BOOTTIME))

    def table(self, f: RocFile) -> CsvTable:
        return open_table(f.path, max_bytes=self.max_bytes, source=f.name)

    def of(self, *tables: Table) -> list[RocFile]:
        return [f for f in self.files if f.table in tables]


def parse_files(
    named: Iterable[tuple[str, Path]], report: ParseReport, *, max_bytes: int, source: str
) -> tuple[TraceHeader, Iterator[Item]]:
    """Parse rocprof files that belong to one run into one trace.

    Args:
        named: ``(name the user knows, path)`` per file.
        report: receives warnings and skipped records.
        max_bytes: cap per file (decompressed).
        source: the upload's name, quoted in errors about the whole set.

    Raises:
        ParseError: an unknown CSV header, files from different runs, a bad cell, ...
    """
    files = [classify_file(name, path) for name, path in named]
    ignored = [f.name for f in files if f.kind is FileKind.OTHER]
    if ignored:
        warn(report, f"ignored files that are no rocprof output: {', '.join(ignored)[:200]}")
    skipped = [f for f in files if f.kind is FileKind.SKIPPED]
    for note in dict.fromkeys(f.note for f in skipped):
        names = [f.name for f in skipped if f.note == note]
        warn(report, f"{', '.join(names[:5])}{' ...' if len(names) > 5 else ''}: {note}")
    files = [f for f in files if f.kind not in (FileKind.OTHER, FileKind.SKIPPED)]
    if not files:
        if skipped:
            raise UnsupportedFormatError(f"{skipped[0].name}: {skipped[0].note}")
        raise _no_rocprof(source)
    run = _Run(files, report, max_bytes, source)
    run.skipped = [f.name for f in skipped]
    if any(f.table in (Table.ROOFLINE, Table.SYSINFO) for f in files) or any(
        f.name.rsplit("/", 1)[-1] == "pmc_perf.csv" for f in files
    ):
        run.header.format = TraceFormat.ROCPROF_COMPUTE
        run.header.metadata["profiler"] = "rocprof-compute"
        events = _compute(run)
    else:
        run.header.metadata["run"] = check_one_run(files, source)
        events = _trace(run)
    run.header.metadata["files"] = [f.name for f in files][:50]
    return run.header, _finish(run, events)


def parse_folder(
    folder: Path, report: ParseReport, *, max_bytes: int, source: str
) -> tuple[TraceHeader, Iterator[Event]]:
    """Parse every file under `folder` (an output folder or an extracted archive) as one
    run, one `Event` at a time (the registry's hooks keep the blocks)."""
    named = [
        (p.relative_to(folder).as_posix(), p) for p in sorted(folder.rglob("*")) if p.is_file()
    ]
    header, items = parse_files(named, report, max_bytes=max_bytes, source=source)
    return header, flatten(items)


def parse_members(
    root: Path,
    members: Sequence[Any],
    report: ParseReport,
    *,
    max_bytes: int,
    source: str,
) -> tuple[TraceHeader, Iterator[Item]]:
    """`ingest.registry`'s folder-parser hook: extracted archive members (``.name``, ``.path``)."""
    named = [(f"{m.name}", m.path) for m in members]
    return parse_files(named, report, max_bytes=max_bytes, source=source)


def is_rocprof_folder(folder: Path) -> bool:
    """Whether any file under `folder` is rocprof output (for routing an extracted archive)."""
    for p in folder.rglob("*"):
        if p.is_file():
            try:
                kind = classify_file(p.name, p).kind
            except ParseError:
                continue
            if kind is FileKind.ROCPD and not rocpd.is_rocpd(p):
                continue
            if kind is not FileKind.OTHER:
                return True
    return False


def parse_one(
    path: Path, report: ParseReport, *, max_bytes: int, source: str
) -> tuple[TraceHeader, Iterator[Item]]:
    """Parse a single rocprof file (any CSV table, v1/v3 JSON, rocpd)."""
    return parse_files([(source or path.name, path)], report, max_bytes=max_bytes, source=source)


def _no_rocprof(source: str) -> ParseError:
    return ParseError("no rocprof output found (no rocprof CSV, JSON or rocpd file)", source=source)


def _finish(run: _Run, events: Iterable[Item]) -> Iterator[Item]:
    count = 0
    for event in events:
        count += len(event) if isinstance(event, EventBlock) else 1
        yield event
    run.header.devices[:] = run.devices.sorted()
    if count == 0:
        warn(run.report, NO_ACTIVITY)


def _trace(run: _Run) -> Iterator[Item]:
    kinds = {f.kind for f in run.files}
    for preferred in (FileKind.ROCPD, FileKind.V3_JSON):
        if preferred in kinds:
            chosen = [f for f in run.files if f.kind is preferred]
            others = [f.name for f in run.files if f.kind is not preferred]
            if others:
                warn(run.report, f"read {chosen[0].name}; the same run's {others[0]}... skipped")
            if len(chosen) > 1:
                warn(run.report, f"read {chosen[0].name} only of {len(chosen)} {preferred} files")
            reader = rocpd.parse if preferred is FileKind.ROCPD else v3_json.parse
            run.header.metadata["profiler"] = "rocprofv3"
            return reader(chosen[0], run.header, run.devices, run.report, max_bytes=run.max_bytes)
    run.header.format, run.header.metadata["profiler"] = _family(run, {f.table for f in run.files})
    return _csv_set(run)


def _csv_set(run: _Run) -> Iterator[Item]:
    tables = {f.table for f in run.files}
    for f in run.of(Table.V3_AGENTS):
        v3_csv.read_agents(run.table(f), run.devices)
    counters: v3_csv.Counters = {}
    counter_rows = []
    for f in run.of(Table.V3_COUNTERS):
        found, rows = v3_csv.read_counters(run.table(f))
        counters.update(found)
        counter_rows.extend(rows)
    checks = [
        stats_csv.StatsCheck(stats_csv.read_stats(run.table(f)), f.name)
        for f in run.of(Table.STATS)
        if "kernel" in f.name or f.run.endswith("results")
    ]
    events: Iterable[Item] = _csv_events(run, tables, counters, counter_rows)
    if not (tables & {Table.DISPATCHES, Table.V3_KERNELS, Table.V3_COUNTERS}):
        checks = []
        for f in run.of(Table.STATS):
            stat_rows = stats_csv.read_stats(run.table(f))
            kept = stats_csv.as_metadata(stat_rows)
            run.header.metadata.setdefault("rocprof_stats", {})[f.name] = kept
            warn(run.report, f"{f.name} is rocprof's summary table: {STATS_ONLY}")
    for check in checks:
        events = check.watch(events)
    yield from events
    for check in checks:
        check.finish(run.report)


def _csv_events(
    run: _Run, tables: set[Table | None], counters: v3_csv.Counters, counter_rows: list[Any]
) -> Iterator[Item]:
    """Every file's events, each file checked to share the others' clock (`_Clock`)."""
    clock = _Clock(run.source)
    for name, events in _csv_files(run, tables, counters, counter_rows):
        yield from clock.watch(name, events)


def _csv_files(
    run: _Run, tables: set[Table | None], counters: v3_csv.Counters, counter_rows: list[Any]
) -> Iterator[tuple[str, Iterable[Item]]]:
    for f in run.of(Table.DISPATCHES):
        yield f.name, iter_dispatches(run.table(f), run.devices)
    for f in run.of(Table.V3_KERNELS):
        yield f.name, v3_csv.iter_kernels(run.table(f), run.devices, counters)
    if Table.V3_KERNELS not in tables and counter_rows:
        names = ", ".join(f.name for f in run.of(Table.V3_COUNTERS))
        yield names, v3_csv.iter_counter_dispatches(counter_rows, counters, run.devices, run.report)
    for f in run.of(Table.V3_COPIES):
        yield f.name, v3_csv.iter_copies(run.table(f), run.devices, run.report)
    for f in run.of(Table.V3_ALLOCATIONS):
        yield f.name, v3_csv.iter_allocations(run.table(f))
    for f in run.of(Table.V3_API):
        yield f.name, v3_csv.iter_api(run.table(f))
    for f in run.of(Table.V2_API):
        yield f.name, v2_csv.iter_api(run.table(f))
    for f in run.of(Table.V2_ROCTX):
        yield f.name, v2_csv.iter_roctx(run.table(f))
    for f in run.of(Table.V2_ASYNC):
        yield f.name, v2_csv.iter_async(run.table(f), run.report)
    for f in (f for f in run.files if f.kind is FileKind.V1_JSON):
        doc = v1_json.load(f.path, max_bytes=run.max_bytes, source=f.name)
        v1_json.read_devices(doc, run.devices)
        kernels = Table.DISPATCHES not in tables
        yield f.name, v1_json.iter_events(doc, run.devices, run.report, kernels=kernels)


def _family(run: _Run, tables: set[Table | None]) -> tuple[TraceFormat, str]:
    if tables & V3_TABLES or any("MinNs" in f.header for f in run.of(Table.STATS)):
        return TraceFormat.ROCPROFV3_CSV, "rocprofv3"
    v2_dispatches = any("Correlation_ID" in f.header for f in run.of(Table.DISPATCHES))
    if tables & V2_TABLES or v2_dispatches:
        return TraceFormat.ROCPROF_CSV, "rocprofv2"
    if tables <= {None}:
        return TraceFormat.ROCPROF_JSON, "rocprof v1"
    return TraceFormat.ROCPROF_CSV, "rocprof v1"


def _compute(run: _Run) -> Iterator[Item]:
    by_name = {f.name.rsplit("/", 1)[-1]: f for f in run.files}
    main = next((by_name[n] for n in _COMPUTE_NAMES if n in by_name), None)
    skipped = [f.name for f in run.of(Table.DISPATCHES) if f is not main]
    if main is not None and skipped:
        warn(run.report, f"dispatches read from {main.name}; {', '.join(skipped)[:160]} not read")
    for f in run.of(Table.ROOFLINE):
        compute.read_roofline(run.table(f), run.devices)
    system: dict[str, Any] = {}
    for f in run.of(Table.SYSINFO):
        system = compute.read_sysinfo(run.table(f))
    if main is not None:
        yield from iter_dispatches(run.table(main), run.devices)
    else:
        empty = [n for n in run.skipped if n.rsplit("/", 1)[-1] in _COMPUTE_NAMES]
        warn(
            run.report,
            f"{empty[0]} has no dispatch rows (did the run's dispatch filter match none?): "
            "peaks only"
            if empty
            else "the workload has no pmc_perf.csv or timestamps.csv: peaks only",
        )
    for device in run.devices.by_index.values():
        run.devices.see(device.index, str(system.get("model", "")), **system)
    if not run.devices.by_index and system:
        run.devices.see(0, str(system.get("model", "")), **system)
