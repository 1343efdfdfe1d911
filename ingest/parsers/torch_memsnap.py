"""PyTorch memory snapshot (`torch.cuda.memory._dump_snapshot`, a pickle) as a trace.

The events are the allocator history as the profiler's own `[memory]` instants (signed
`Bytes`, `Total Allocated`, `Total Reserved` after each), so the timeline's memory counters,
the Memory tab and SQL over the trace read them as they read a torch.profiler trace, plus
the record_function phases (`external_annotations`) as annotation ranges. The snapshot
views (`ingest.memsnap.build_views`) travel on the header to the dataset.

Public surface: `parse`, `sniff`, `is_memory_snapshot`, `read_snapshot`, `phases_from_trace`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ingest._io import read_all
from ingest.errors import ParseError, UnsupportedFormatError
from ingest.events import (
    Device,
    Event,
    EventBlock,
    EventKind,
    ParseReport,
    TraceFormat,
    TraceHeader,
)
from ingest.memsnap import Snapshot, build_views, load_snapshot
from ingest.memsnap.replay import ALLOC, FREE, replay, round_size
from ingest.memsnap.snapshot import Annotation

_KEYS = (b"segments", b"device_traces")
# A snapshot is loaded whole, as Python objects about 20x its size: a cap of its own, below
# the general decompressed-size one.
MAX_SNAPSHOT_BYTES = 256 << 20
Items = Iterator[Event | EventBlock]


def is_memory_snapshot(head: bytes) -> bool:
    """Whether the first bytes look like a pickled snapshot dict: the PROTO opcode, then
    `segments` or `device_traces` as one of the first keys (torch writes `segments` first)."""
    return (
        head[:1] == b"\x80"
        and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05")
        and any(k in head[:256] for k in _KEYS)
    )


def sniff(path: Path, head: bytes, source: str = "") -> TraceFormat | None:
    """`ingest.detect`'s hook: a snapshot pickle, or None for anything else but a pickle.

    Raises:
        UnsupportedFormatError: another pickle (only snapshots are ever unpickled).
    """
    if is_memory_snapshot(head):
        return TraceFormat.TORCH_MEMORY_SNAPSHOT
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        raise UnsupportedFormatError(
            f"{source or path.name}: a Python pickle, but not a torch.cuda.memory snapshot (no "
            "'segments' or 'device_traces' key near the start); perfdash unpickles only memory "
            "snapshots"
        )
    return None


def read_snapshot(path: Path, *, max_bytes: int, source: str) -> Snapshot:
    """The snapshot in the pickle at `path` (gzip allowed), loaded safely."""
    return load_snapshot(_read(path, max_bytes, source), source=source)


def _read(path: Path, max_bytes: int, source: str) -> bytes:
    cap = min(max_bytes, MAX_SNAPSHOT_BYTES)
    try:
        return read_all(path, max_bytes=cap, source=source)
    except ParseError as e:
        if cap < max_bytes and e.offset is not None and e.offset > cap:
            raise ParseError(
                f"the snapshot is larger than {cap} bytes, perfdash's limit for a pickle (it is "
                "loaded whole); record fewer entries (max_entries) or with stacks='python'",
                source=source,
            ) from e
        raise


def phases_from_trace(items: Items, snap: Snapshot, views: dict[str, Any]) -> Items:
    """Pass `items` through; once they are read, redo `views` with the trace's annotation
    ranges as the phases (for a snapshot without `external_annotations`, as older torch
    writes). Both clocks are the host's wall clock in this torch; ranges that miss the
    snapshot's history are left out."""
    ranges: list[tuple[str, int, int]] = []
    for item in items:
        if item.kind is EventKind.ANNOTATION:
            if isinstance(item, EventBlock):
                ranges += zip(item.name, item.start_ns, item.dur_ns, strict=True)
            else:
                ranges.append((item.name, item.start_ns, item.dur_ns))
        yield item
    times = [e.time_us for t in snap.traces.values() for e in t if e.time_us is not None]
    if not times:
        return
    lo, hi = min(times), max(times)
    for name, start_ns, dur_ns in ranges:
        start, end = start_ns // 1000, (start_ns + dur_ns) // 1000
        if end < lo or start > hi:
            continue
        for device in snap.traces:
            snap.annotations.append(Annotation(device, "START", name, start))
            snap.annotations.append(Annotation(device, "END", name, end))
    views.update(build_views(snap, phases_source="the profiler trace's record_function ranges"))


def parse(
    path: Path, report: ParseReport, *, max_bytes: int, source: str
) -> tuple[TraceHeader, Iterator[Event]]:
    """Read a memory snapshot: header (devices, settings, the tab's views) and its events.

    Raises:
        ParseError: not a safe, plain-data snapshot pickle, or a field of the wrong type.
    """
    data = _read(path, max_bytes, source)
    report.bytes_total = report.bytes_done = len(data)
    snap = load_snapshot(data, source=source)
    devices = sorted({s.device for s in snap.segments} | set(snap.traces))
    header = TraceHeader(
        format=TraceFormat.TORCH_MEMORY_SNAPSHOT,
        devices=[Device(index=d) for d in devices],
        metadata={"allocator_settings": snap.settings, "memory_snapshot": {"file": source}},
        memory_snapshot=build_views(snap),
    )
    if not any(e.time_us is not None for t in snap.traces.values() for e in t):
        report.warnings.append(
            "the snapshot has no timed trace entries (recorded without "
            "_record_memory_history?): only the dump-time views are available"
        )
    return header, _events(snap)


def _events(snap: Snapshot) -> Iterator[Event]:
    for device, entries in snap.traces.items():
        r = replay(device, snap.segments, entries)
        for i, e in enumerate(entries):
            if e.time_us is None or e.action not in (ALLOC, FREE):
                continue
            sign = 1 if e.action == ALLOC else -1
            args = {
                "Bytes": sign * round_size(e.size), "Total Allocated": r.allocated[i],
                "Total Reserved": r.reserved[i], "Device Type": 1, "Device Id": device,
                "Addr": e.addr,
            }  # fmt: skip
            yield Event(
                EventKind.MEMORY, "[memory]", e.time_us * 1000, 0, pid=0, tid=e.stream, args=args
            )
    yield from _annotation_events(snap)


def _annotation_events(snap: Snapshot) -> Iterator[Event]:
    open_: dict[tuple[int, str], list[int]] = {}
    for a in sorted(snap.annotations, key=lambda a: a.time_us):
        key = (a.device, a.name)
        if a.stage == "START":
            open_.setdefault(key, []).append(a.time_us)
        elif a.stage == "END" and open_.get(key):
            start = open_[key].pop()
            dur = (a.time_us - start) * 1000
            yield Event(EventKind.ANNOTATION, a.name, start * 1000, dur, pid=0, tid=a.device)
