"""torch.profiler / Kineto Chrome-trace JSON (``*.pt.trace.json[.gz]``).

Events are classified by ``cat`` only, never by pid (FORMATS.md §1.6: python_function
events can sit on GPU 0's pid). Timestamps are µs; since 2024 they are relative to
``baseTimeNanoseconds``. Only whitelisted top-level metadata is kept, so environment-like
keys a user added with ``add_metadata_json`` never reach the database.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from ingest._io import read_all
from ingest.errors import ParseError
from ingest.events import Device, Event, EventKind, ParseReport, TraceFormat, TraceMeta

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
) -> tuple[TraceMeta, Iterator[Event]]:
    """Read a Kineto trace.

    Args:
        path: the file (plain or gzip).
        report: receives skipped-event counts and warnings.
        max_bytes: cap on the decompressed size.
        source: the file name shown in errors.

    Returns:
        The trace metadata and an iterator over normalised events.

    Raises:
        ParseError: the JSON is malformed, truncated, or not a Kineto trace.
    """
    data = read_all(path, max_bytes=max_bytes, source=source)
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        raise ParseError(f"invalid JSON: {e.msg}", source=source, offset=e.pos) from e
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise ParseError("not a torch.profiler trace: no 'traceEvents' list", source=source)
    meta = _read_meta(doc)
    return meta, _iter_events(doc["traceEvents"], meta.base_time_ns or 0, report)


def _read_meta(doc: dict[str, Any]) -> TraceMeta:
    meta = TraceMeta(format=TraceFormat.KINETO)
    base = doc.get("baseTimeNanoseconds")
    meta.base_time_ns = base if isinstance(base, int) else None
    meta.metadata = {k: v for k, v in doc.items() if k in KEPT_METADATA}
    for i, props in enumerate(doc.get("deviceProperties") or []):
        if isinstance(props, dict):
            kept = {k: v for k, v in props.items() if k in DEVICE_PROPERTY_KEYS}
            index = kept.get("id", i)
            meta.devices.append(
                Device(
                    index=index if isinstance(index, int) else i,
                    name=str(kept.get("name", "")),
                    properties=kept,
                )
            )
    dist = doc.get("distributedInfo")
    if isinstance(dist, dict):
        rank, world = dist.get("rank"), dist.get("world_size")
        meta.rank = rank if isinstance(rank, int) else None
        meta.world_size = world if isinstance(world, int) else None
    return meta


def _iter_events(raw: list[Any], base_ns: int, report: ParseReport) -> Iterator[Event]:
    for index, item in enumerate(raw):
        if not isinstance(item, dict):
            report.skip(f"traceEvents[{index}]: not an object")
            continue
        kind = CATEGORY_KINDS.get(item.get("cat", ""))
        if kind is None:
            if item.get("name") == "[memory]":  # 2021 traces: memory instants had no cat
                kind = EventKind.MEMORY
            else:
                continue
        try:
            yield _to_event(item, kind, base_ns)
        except (TypeError, ValueError, KeyError) as e:
            report.skip(f"traceEvents[{index}] ({item.get('name', '?')!s:.60}): {e}")


def _to_event(item: dict[str, Any], kind: EventKind, base_ns: int) -> Event:
    ts = item["ts"]
    dur = item.get("dur", 0) if kind is EventKind.MEMORY else item["dur"]
    start_ns, dur_ns = base_ns + _us_to_ns(ts), _us_to_ns(dur)
    if dur_ns < 0:
        raise ValueError(f"negative duration {dur!r}")
    args = item.get("args") or {}
    if not isinstance(args, dict):
        raise TypeError("'args' is not an object")
    kept = {k: v for k, v in args.items() if k in KEPT_ARGS}
    correlation = args.get("correlation")
    if kind in DEVICE_KINDS:
        return Event(
            kind=kind,
            name=str(item.get("name", "")),
            start_ns=start_ns,
            dur_ns=dur_ns,
            device=_as_int(args.get("device", item.get("pid"))),
            stream=_as_int(args.get("stream", item.get("tid"))),
            correlation=_as_int(correlation),
            args=kept or None,
        )
    return Event(
        kind=kind,
        name=str(item.get("name", "")),
        start_ns=start_ns,
        dur_ns=dur_ns,
        pid=_as_int(item.get("pid")),
        tid=_as_int(item.get("tid")),
        correlation=_as_int(correlation),
        args=kept or None,
    )


def _us_to_ns(value: object) -> int:
    """Convert a Kineto µs value (int, float or numeric string) to integer ns.

    >>> _us_to_ns(1.5), _us_to_ns(3), _us_to_ns("2.001")
    (1500, 3000, 2001)
    """
    if isinstance(value, bool):
        raise TypeError("time is a boolean")
    if isinstance(value, int):
        return value * 1000
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError("time is not finite")
        return round(value * 1000)
    if isinstance(value, str):
        whole, _, frac = value.strip().partition(".")
        sign = -1 if whole.startswith("-") else 1
        return int(whole) * 1000 + sign * int((frac + "000")[:3] or "0")
    raise TypeError(f"time has type {type(value).__name__}")


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
