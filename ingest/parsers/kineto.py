"""torch.profiler / Kineto Chrome-trace JSON (``*.pt.trace.json[.gz]``).

Events are classified by ``cat`` only, never by pid (FORMATS.md §1.6: python_function
events can sit on GPU 0's pid). Timestamps are µs; since 2024 they are relative to
``baseTimeNanoseconds``. Only whitelisted top-level metadata is kept, so environment-like
keys a user added with ``add_metadata_json`` never reach the database.

Pieces of the event array come decoded by msgspec into `KinetoEvent` structs (the fast
path, `_typed_rows`) or, where that could change the answer, by orjson into dicts
(`_generic_rows`); both make the same events, and an odd event on the fast path is
handed to the per-dict conversion, so skips and their messages are the same too.

Events leave as `EventBlock` columns, one block per kind at a time (`_kineto_blocks`):
each kind in file order, the kinds interleaved only block by block.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from sys import intern
from typing import Any

from msgspec import UNSET

from ingest._io import ByteStream
from ingest.errors import IngestError
from ingest.events import (
    Device,
    Event,
    EventBlock,
    EventKind,
    Flows,
    ParseReport,
    TraceFormat,
    TraceHeader,
)
from ingest.parsers._json_stream import TraceArray, open_trace_array
from ingest.parsers._kineto_blocks import Appends, KindColumns
from ingest.parsers._kineto_flows import REBUILT_CATEGORIES, add_flow, add_typed_flow, is_flow
from ingest.parsers._kineto_sniff import sniff as sniff  # detection's hook
from ingest.parsers._kineto_typed import KinetoEvent, decode_piece
from ingest.parsers._kineto_values import as_int, dur_to_ns, float_us_to_ns, ts_to_ns

CATEGORY_KINDS: dict[str, EventKind] = {
    "kernel": EventKind.KERNEL,
    "Kernel": EventKind.KERNEL,
    "gpu_memcpy": EventKind.MEMCPY,
    "Memcpy": EventKind.MEMCPY,
    "gpu_memset": EventKind.MEMSET,
    "Memset": EventKind.MEMSET,
    "cuda_runtime": EventKind.RUNTIME,
    "cuda_driver": EventKind.RUNTIME,
    "Runtime": EventKind.RUNTIME,
    "cpu_op": EventKind.CPU_OP,
    "Operator": EventKind.CPU_OP,
    "user_annotation": EventKind.ANNOTATION,
    "gpu_user_annotation": EventKind.GPU_ANNOTATION,
    "cpu_instant_event": EventKind.MEMORY,
    "cuda_sync": EventKind.SYNC,
    "python_function": EventKind.PYTHON,
    "Python": EventKind.PYTHON,
}
# Complete events that are no activity: the profiler's own span ("PyTorch Profiler (0)").
NOT_EVENTS = frozenset({"Trace"})
UNREAD = (
    "a category perfdash does not read (it reads CPU ops, runtime and driver calls, "
    "annotations, Python functions, and CUDA/HIP kernels, copies, memsets and syncs)"
)
DEVICE_KINDS = frozenset(
    {EventKind.KERNEL, EventKind.MEMCPY, EventKind.MEMSET, EventKind.GPU_ANNOTATION, EventKind.SYNC}
)
KEPT_ARGS = frozenset(
    {
        "grid", "block", "registers per thread", "shared memory", "blocks per SM",
        "warps per SM", "est. achieved occupancy %", "theoretical occupancy %", "context",
        "bytes", "memory bandwidth (GB/s)", "External id", "external id", "cbid", "cid",
        "Input Dims", "Input type", "Sequence number", "Collective name", "In msg nelems",
        "Out msg nelems", "Group size", "dtype", "Process Group Name",
        "Process Group Description", "Process Group Ranks", "Bytes", "Total Allocated",
        "Total Reserved", "Device Type", "Device Id", "Addr", "graph id", "graph node id",
        "cuda_sync_kind", "kernel_backend", "kernel_hash",
    }
)  # fmt: skip
KEPT_METADATA = frozenset(
    {
        "schemaVersion", "displayTimeUnit", "cupti_version", "cuda_runtime_version",
        "cuda_driver_version", "record_shapes", "profile_memory", "with_stack", "with_flops",
        "with_modules", "distributedInfo",
    }
)  # fmt: skip
DEVICE_PROPERTY_KEYS = frozenset(
    {
        "id", "name", "totalGlobalMem", "computeMajor", "computeMinor", "numSms", "warpSize",
        "maxThreadsPerBlock", "maxThreadsPerMultiprocessor", "regsPerBlock",
        "regsPerMultiprocessor", "sharedMemPerBlock", "sharedMemPerMultiprocessor",
        "sharedMemPerBlockOptin", "maxSharedMemoryPerMultiProcessor",
    }
)  # fmt: skip


def parse(
    path: Path, report: ParseReport, *, max_bytes: int, source: str
) -> tuple[TraceHeader, Iterator[EventBlock]]:
    """Read a Kineto trace, streaming its events in bounded memory.

    Args:
        path: the file (plain or gzip).
        report: receives skipped-event counts, warnings and bytes-read progress.
        max_bytes: cap on the decompressed size.
        source: the file name shown in errors.

    Returns:
        The trace header (read from the keys before and after `traceEvents`) and an
        iterator over the normalised events as blocks (each kind in file order).

    Raises:
        ParseError: the JSON is malformed, truncated, or not a Kineto trace (also raised
            later, from the iterator, for damage past the first piece).
    """
    stream = ByteStream(path, max_bytes=max_bytes, source=source)
    report.bytes_total = stream.raw_total
    array = open_trace_array(stream, decode=decode_piece)
    header = _read_header(array.top)
    header.flows = Flows()
    return header, _iter_events(array, stream, header.base_time_ns or 0, report, header.flows)


def _read_header(doc: dict[str, Any]) -> TraceHeader:
    header = TraceHeader(format=TraceFormat.KINETO)
    base = doc.get("baseTimeNanoseconds")
    header.base_time_ns = base if isinstance(base, int) and not isinstance(base, bool) else None
    header.metadata = {k: v for k, v in doc.items() if k in KEPT_METADATA}
    props_list = doc.get("deviceProperties") or doc.get("computeProperties") or []
    for i, props in enumerate(props_list if isinstance(props_list, list) else []):
        if isinstance(props, dict):
            kept = {k: v for k, v in props.items() if k in DEVICE_PROPERTY_KEYS}
            index = kept.get("id", i)
            header.devices.append(
                Device(
                    index=index if isinstance(index, int) else i,
                    name=str(kept.get("name", "")),
                    properties=kept,
                )
            )
    dist = doc.get("distributedInfo")
    if isinstance(dist, dict):
        rank, world = dist.get("rank"), dist.get("world_size")
        header.rank = rank if isinstance(rank, int) else None
        header.world_size = world if isinstance(world, int) else None
    return header


def _iter_events(
    array: TraceArray, stream: ByteStream, base_ns: int, report: ParseReport, flows: Flows
) -> Iterator[EventBlock]:
    columns = KindColumns(DEVICE_KINDS)
    appends = columns.appends
    unread: Counter[str] = Counter()
    try:
        for first, items in array.pieces:
            report.bytes_done = stream.raw_done
            if items and type(items[0]) is KinetoEvent:  # a typed piece is typed throughout
                _typed_rows(items, first, base_ns, report, appends, flows, unread)
            else:
                _generic_rows(items, first, base_ns, report, appends, flows, unread)
            if columns.full():
                yield from columns.flush()
    except IngestError:  # what was read before the damage comes out first, as it did
        yield from columns.flush()
        raise
    yield from columns.flush()
    report_unread(unread, report)
    report.bytes_done = stream.raw_total


def report_unread(unread: Counter[str], report: ParseReport) -> None:
    """Count the complete events of categories perfdash does not read as skipped, one
    warning per category (MTIA device activity, CUPTI range-profiler counters, ...)."""
    for cat, count in unread.most_common():
        report.skip(f"{count} {_printable(cat)} events skipped: {UNREAD}", count)


def _generic_rows(
    items: list[Any],
    first: int,
    base_ns: int,
    report: ParseReport,
    appends: Appends,
    flows: Flows,
    unread: Counter[str],
) -> None:
    kinds, rebuilt = CATEGORY_KINDS, REBUILT_CATEGORIES
    for index, item in enumerate(items, first):
        if type(item) is not dict:
            report.skip(f"traceEvents[{index}]: not an object")
            continue
        cat = item.get("cat")
        kind = kinds.get(cat) if type(cat) is str else None  # a list `cat` is no category
        if kind is None:
            if item.get("name") == "[memory]":  # 2021 traces: memory instants had no cat
                kind = EventKind.MEMORY
            else:
                ph = item.get("ph")
                if (type(cat) is not str or cat not in rebuilt) and is_flow(cat, ph):
                    add_flow(item, index, base_ns, report, flows)
                elif ph == "X" and type(cat) is str and cat not in NOT_EVENTS:
                    unread[cat] += 1
                continue
        _append_or_skip(item, kind, index, base_ns, report, appends)


def _append_or_skip(
    item: dict[str, Any],
    kind: EventKind,
    index: int,
    base_ns: int,
    report: ParseReport,
    appends: Appends,
) -> None:
    """Append `_to_event`'s row, or count the element as skipped and say why."""
    try:
        e = _to_event(item, kind, base_ns)
    except (TypeError, ValueError, KeyError, AttributeError) as error:
        name = _printable(item.get("name", "?"))
        report.skip(f"traceEvents[{index}] ({name}): {type(error).__name__}: {error}")
        return
    add_name, add_start, add_dur, add_a, add_b, add_corr, add_args = appends[kind]
    add_name(e.name)
    add_start(e.start_ns)
    add_dur(e.dur_ns)
    add_a(e.device if kind in DEVICE_KINDS else e.pid)
    add_b(e.stream if kind in DEVICE_KINDS else e.tid)
    add_corr(e.correlation)
    add_args(e.args)


def _typed_rows(
    items: list[KinetoEvent],
    first: int,
    base_ns: int,
    report: ParseReport,
    appends: Appends,
    flows: Flows,
    unread: Counter[str],
) -> None:
    """`_generic_rows` for a typed piece: `_to_event` inlined for the fields' usual types.

    Whatever is unusual (a quoted or missing time, a negative duration) goes to
    `_append_or_skip` with the element as the generic path sees it, so the row, or the
    skip and its message, is the generic path's.
    """
    kinds, device_kinds, kept_keys = CATEGORY_KINDS, DEVICE_KINDS, KEPT_ARGS
    memory, unset, rebuilt = EventKind.MEMORY, UNSET, REBUILT_CATEGORIES
    start: int
    dur_ns: int
    for index, e in enumerate(items, first):
        kind = kinds.get(e.cat)  # type: ignore[arg-type]
        if kind is None:
            if e.name != "[memory]":
                if e.cat not in rebuilt and is_flow(e.cat, e.ph):
                    add_typed_flow(e, index, base_ns, report, flows)
                elif e.ph == "X" and type(e.cat) is str and e.cat not in NOT_EVENTS:
                    unread[e.cat] += 1
                continue
            kind = memory
        ts, dur = e.ts, e.dur
        odd = False
        if type(ts) is float:
            start = round(ts * 1000)
            if start / 1000 != ts:
                start = float_us_to_ns(ts)
        elif type(ts) is int:
            start = ts * 1000
        elif type(ts) is str:  # quoted: a piece with times too large for a float
            try:
                start = ts_to_ns(ts)
            except ValueError:
                odd = True
        else:
            odd = True
        if type(dur) is float:
            dur_ns = round(dur * 1000)
        elif type(dur) is int:
            dur_ns = dur * 1000
        elif dur is unset and kind is memory:
            dur_ns = 0
        else:
            odd = True
        if odd or dur_ns < 0:
            _append_or_skip(e.as_item(), kind, index, base_ns, report, appends)
            continue
        args = e.args
        if args:
            kept = {k: v for k, v in args.items() if k in kept_keys} or None
            corr = args.get("correlation")
            if corr is not None and type(corr) is not int:
                corr = as_int(corr)
        else:
            kept = corr = None
        name = e.name
        name = intern(name) if name is not unset else ""  # see `_to_event`
        if kind in device_kinds:
            if args:
                a, b = args.get("device", e.pid), args.get("stream", e.tid)
            else:
                a, b = e.pid, e.tid
        else:
            a, b = e.pid, e.tid
        a = a if type(a) is int else as_int(a)
        b = b if type(b) is int else as_int(b)
        add_name, add_start, add_dur, add_a, add_b, add_corr, add_args = appends[kind]
        add_name(name)
        add_start(base_ns + start)
        add_dur(dur_ns)
        add_a(a)
        add_b(b)
        add_corr(corr)
        add_args(kept)


def _printable(value: object) -> str:
    return repr(value)[:60]


def _to_event(item: dict[str, Any], kind: EventKind, base_ns: int) -> Event:
    start_ns = base_ns + ts_to_ns(item["ts"])
    dur = item.get("dur", 0) if kind is EventKind.MEMORY else item["dur"]
    dur_ns = dur_to_ns(dur)
    args = item.get("args")
    if args:
        if type(args) is not dict:
            raise TypeError("'args' is not an object")
        kept = {k: v for k, v in args.items() if k in KEPT_ARGS} or None
        correlation = args.get("correlation")
    else:
        kept = correlation = None
    name = item.get("name", "")
    # Interned: a trace repeats a few thousand names across millions of events, and the
    # timeline and summary columns keep one reference per event, not one string.
    name = intern(name if type(name) is str else str(name))
    if kind in DEVICE_KINDS:
        return Event(
            kind,
            name,
            start_ns,
            dur_ns,
            as_int(args.get("device", item.get("pid")) if args else item.get("pid")),
            as_int(args.get("stream", item.get("tid")) if args else item.get("tid")),
            None,
            None,
            as_int(correlation),
            kept,
        )
    return Event(
        kind,
        name,
        start_ns,
        dur_ns,
        None,
        None,
        as_int(item.get("pid")),
        as_int(item.get("tid")),
        as_int(correlation),
        kept,
    )
