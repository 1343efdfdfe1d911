"""torch.profiler / Kineto Chrome-trace JSON (``*.pt.trace.json[.gz]``).

Events are classified by ``cat`` only, never by pid (FORMATS.md §1.6: python_function
events can sit on GPU 0's pid). Timestamps are µs; since 2024 they are relative to
``baseTimeNanoseconds``. Only whitelisted top-level metadata is kept, so environment-like
keys a user added with ``add_metadata_json`` never reach the database.

Pieces of the event array come decoded by msgspec into `KinetoEvent` structs (the fast
path, `_typed_events`) or, where that could change the answer, by orjson into dicts
(`_generic_events`); both make the same events, and an odd event on the fast path is
handed to the per-dict conversion, so skips and their messages are the same too.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from pathlib import Path
from sys import intern
from typing import Any

from msgspec import UNSET

from ingest._io import ByteStream
from ingest.events import Device, Event, EventKind, ParseReport, TraceFormat, TraceHeader
from ingest.parsers._json_stream import TraceArray, open_trace_array
from ingest.parsers._kineto_typed import KinetoEvent, decode_piece

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
) -> tuple[TraceHeader, Iterator[Event]]:
    """Read a Kineto trace, streaming its events in bounded memory.

    Args:
        path: the file (plain or gzip).
        report: receives skipped-event counts, warnings and bytes-read progress.
        max_bytes: cap on the decompressed size.
        source: the file name shown in errors.

    Returns:
        The trace header (read from the keys before and after `traceEvents`) and an
        iterator over normalised events.

    Raises:
        ParseError: the JSON is malformed, truncated, or not a Kineto trace (also raised
            later, from the iterator, for damage past the first piece).
    """
    stream = ByteStream(path, max_bytes=max_bytes, source=source)
    report.bytes_total = stream.raw_total
    array = open_trace_array(stream, decode=decode_piece)
    header = _read_header(array.top)
    return header, _iter_events(array, stream, header.base_time_ns or 0, report)


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
    array: TraceArray, stream: ByteStream, base_ns: int, report: ParseReport
) -> Iterator[Event]:
    for first, items in array.pieces:
        report.bytes_done = stream.raw_done
        if items and type(items[0]) is KinetoEvent:  # a typed piece is typed throughout
            yield from _typed_events(items, first, base_ns, report)
        else:
            yield from _generic_events(items, first, base_ns, report)
    report.bytes_done = stream.raw_total


def _generic_events(
    items: list[Any], first: int, base_ns: int, report: ParseReport
) -> Iterator[Event]:
    kinds = CATEGORY_KINDS
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
                continue
        event = _event_or_skip(item, kind, index, base_ns, report)
        if event is not None:
            yield event


def _event_or_skip(
    item: dict[str, Any], kind: EventKind, index: int, base_ns: int, report: ParseReport
) -> Event | None:
    """`_to_event`, or None after counting the element as skipped and saying why."""
    try:
        return _to_event(item, kind, base_ns)
    except (TypeError, ValueError, KeyError, AttributeError) as e:
        name = _printable(item.get("name", "?"))
        report.skip(f"traceEvents[{index}] ({name}): {type(e).__name__}: {e}")
        return None


def _typed_events(
    items: list[KinetoEvent], first: int, base_ns: int, report: ParseReport
) -> list[Event]:
    """`_generic_events` for a typed piece: `_to_event` inlined for the fields' usual types.

    Whatever is unusual (a quoted or missing time, a negative duration) goes to
    `_event_or_skip` with the element as the generic path sees it, so the result, or the
    skip and its message, is the generic path's.
    """
    kinds, device_kinds, kept_keys = CATEGORY_KINDS, DEVICE_KINDS, KEPT_ARGS
    memory, unset, as_int = EventKind.MEMORY, UNSET, _as_int
    start: int
    dur_ns: int
    events: list[Event] = []
    append = events.append  # a list per piece: cheaper than a generator's yield per event
    for index, e in enumerate(items, first):
        kind = kinds.get(e.cat)  # type: ignore[arg-type]
        if kind is None:
            if e.name != "[memory]":
                continue
            kind = memory
        ts, dur = e.ts, e.dur
        odd = False
        if type(ts) is float:
            start = round(ts * 1000)
            if start / 1000 != ts:
                start = _float_us_to_ns(ts)
        elif type(ts) is int:
            start = ts * 1000
        elif type(ts) is str:  # quoted: a piece with times too large for a float
            try:
                start = _ts_to_ns(ts)
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
            event = _event_or_skip(e.as_item(), kind, index, base_ns, report)
            if event is not None:
                append(event)
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
                device, stream = args.get("device", e.pid), args.get("stream", e.tid)
            else:
                device, stream = e.pid, e.tid
            device = device if type(device) is int else as_int(device)
            stream = stream if type(stream) is int else as_int(stream)
            append(
                Event(kind, name, base_ns + start, dur_ns, device, stream, None, None, corr, kept)
            )
        else:
            pid, tid = e.pid, e.tid
            pid = pid if type(pid) is int else as_int(pid)
            tid = tid if type(tid) is int else as_int(tid)
            append(Event(kind, name, base_ns + start, dur_ns, None, None, pid, tid, corr, kept))
    return events


def _printable(value: object) -> str:
    return repr(value)[:60]


def _to_event(item: dict[str, Any], kind: EventKind, base_ns: int) -> Event:
    start_ns = base_ns + _ts_to_ns(item["ts"])
    dur = item.get("dur", 0) if kind is EventKind.MEMORY else item["dur"]
    dur_ns = _dur_to_ns(dur)
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
            _as_int(args.get("device", item.get("pid")) if args else item.get("pid")),
            _as_int(args.get("stream", item.get("tid")) if args else item.get("tid")),
            None,
            None,
            _as_int(correlation),
            kept,
        )
    return Event(
        kind,
        name,
        start_ns,
        dur_ns,
        None,
        None,
        _as_int(item.get("pid")),
        _as_int(item.get("tid")),
        _as_int(correlation),
        kept,
    )


def _ts_to_ns(value: object) -> int:
    """A Kineto `ts` (µs; quoted by the reader so no digit is lost) as integer ns.

    >>> _ts_to_ns("5151594869354.904"), _ts_to_ns("-1.5"), _ts_to_ns(3), _ts_to_ns("1e3")
    (5151594869354904, -1500, 3000, 1000000)
    """
    if type(value) is str:
        whole, _, frac = value.partition(".")
        if len(frac) <= 3 and whole.lstrip("-").isdigit() and (not frac or frac.isdigit()):
            ns = int(whole) * 1000
            if frac:
                f = int(frac) * _FRAC_SCALE[len(frac)]
                ns = ns - f if whole.startswith("-") else ns + f
            return ns
        try:
            exact = Decimal(value) * 1000
        except InvalidOperation:
            raise ValueError(f"time {value!r} is not a number") from None
        if not exact.is_finite():
            raise ValueError("time is not finite")
        return int(exact.to_integral_value(rounding=ROUND_HALF_EVEN))
    if type(value) is float:
        return _float_us_to_ns(value)
    return _dur_to_ns(value, what="time")


def _float_us_to_ns(value: float) -> int:
    """The integer ns whose 3-decimal µs text parses to `value` (exact below 2**43 µs).

    The reader quotes larger `ts` values, so this never has to guess.

    >>> _float_us_to_ns(5151594869354.904)
    5151594869354904
    """
    if value != value or value in (_INF, -_INF):
        raise ValueError("time is not finite")
    ns = round(value * 1000)
    if ns / 1000 != value:
        for candidate in (ns - 1, ns + 1):
            if candidate / 1000 == value:
                return candidate
    return ns


_FRAC_SCALE = (1000, 100, 10, 1)


def _dur_to_ns(value: object, what: str = "duration") -> int:
    """A µs duration (int, float or numeric string) as integer ns; never negative or NaN.

    Durations are short, so a float64 holds them exactly to the nanosecond.

    >>> _dur_to_ns(1.5), _dur_to_ns(3), _dur_to_ns("2.001")
    (1500, 3000, 2001)
    """
    t = type(value)
    if t is float:
        if value != value or value in (_INF, -_INF):
            raise ValueError(f"{what} is not finite")
        ns = round(value * 1000)  # type: ignore[operator]
    elif t is int:
        ns = value * 1000  # type: ignore[operator]
    elif t is str:
        ns = _ts_to_ns(value)
    else:
        raise TypeError(f"{what} is a {_TYPE_WORDS.get(t, t.__name__)}, not a number")
    if what == "duration" and ns < 0:
        raise ValueError(f"negative duration {value!r}")
    return ns


_INF = float("inf")
_TYPE_WORDS = {bool: "boolean", type(None): "null", list: "list", dict: "object"}


def _as_int(value: object) -> int | None:
    """Best-effort integer for ids that older traces wrote as strings ("stream 7").

    >>> _as_int("stream 7"), _as_int(12), _as_int("0x1f"), _as_int(None)
    (7, 12, 31, None)
    """
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    if isinstance(value, str):
        token = value.strip().split(" ")[-1]
        try:
            return int(token, 0)
        except ValueError:
            return None
    return None
