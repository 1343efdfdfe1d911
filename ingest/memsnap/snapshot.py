"""A PyTorch memory snapshot, read safely and checked field by field into typed records.

`torch.cuda.memory._dump_snapshot(path)` pickles `torch.cuda.memory._snapshot()`: a dict with
`segments` (the caching allocator's cudaMalloc'd regions at dump time, each with its
`blocks`), `device_traces` (per device, the ring buffer of allocator actions that
`_record_memory_history(max_entries=...)` kept), and in newer releases `allocator_settings`
and `external_annotations` (record_function START/END marks). Only the fields the views
use are kept; a wrong type is refused with the path to it (``segments[3].blocks[0].size``).

Public surface: `load_snapshot`, `Snapshot`, `Segment`, `Block`, `TraceEntry`, `Annotation`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ingest.errors import ParseError
from ingest.parsers._safe_pickle import load_plain_pickle

Frames = tuple[str, ...]  # "file:line function", innermost first


@dataclass(slots=True)
class Block:
    address: int
    size: int
    requested_size: int
    state: str  # active_allocated, active_pending_free, inactive
    frames: Frames


@dataclass(slots=True)
class Segment:
    device: int
    address: int
    total_size: int
    stream: int
    segment_type: str
    is_expandable: bool
    blocks: list[Block]


@dataclass(slots=True)
class TraceEntry:
    device: int
    action: str
    addr: int
    size: int
    stream: int
    time_us: int | None
    frames: Frames


@dataclass(slots=True)
class Annotation:
    device: int
    stage: str  # START or END
    name: str
    time_us: int


@dataclass(slots=True)
class Snapshot:
    segments: list[Segment]
    traces: dict[int, list[TraceEntry]]
    annotations: list[Annotation] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)


class _Reader:
    """Typed field access that names the path of what is wrong, and counts what it reads
    so a pickle whose memo references multiply one list many times over is refused."""

    def __init__(self, source: str, max_items: int) -> None:
        self.source, self.left = source, max_items

    def fail(self, path: str, message: str) -> ParseError:
        return ParseError(message, source=self.source, location=path)

    def items(self, value: Any, path: str) -> list[Any]:
        if not isinstance(value, list | tuple):
            raise self.fail(path, f"expected a list, found {type(value).__name__}")
        self.left -= len(value)
        if self.left < 0:
            raise self.fail(path, "the snapshot has too many entries; refused as too large")
        return list(value)

    def obj(self, value: Any, path: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(path, f"expected a dict, found {type(value).__name__}")
        return value

    def integer(self, d: dict[str, Any], key: str, path: str, default: int | None = None) -> int:
        value = d.get(key, default)
        if type(value) is not int:
            found = "nothing" if key not in d else type(value).__name__
            raise self.fail(f"{path}.{key}", f"expected an integer, found {found}")
        return value

    def text(self, d: dict[str, Any], key: str, path: str, default: str | None = None) -> str:
        value = d.get(key, default)
        if not isinstance(value, str):
            found = "nothing" if key not in d else type(value).__name__
            raise self.fail(f"{path}.{key}", f"expected a string, found {found}")
        return value

    def frames(self, d: dict[str, Any], path: str) -> Frames:
        out = []
        for i, f in enumerate(self.items(d.get("frames", []), f"{path}.frames")):
            f = self.obj(f, f"{path}.frames[{i}]")
            name, file = f.get("name", "?"), f.get("filename", "?")
            out.append(f"{file}:{f.get('line', '?')} {name}")
        return tuple(out)


def load_snapshot(data: bytes, *, source: str, max_items: int = 20_000_000) -> Snapshot:
    """Unpickle `data` without running anything and check it is a memory snapshot.

    Args:
        data: the pickle's bytes.
        source: the file name, for error messages.
        max_items: refuse snapshots with more list elements than this in total.

    Raises:
        ParseError: unsafe or unreadable pickle, or a field of the wrong type (with its path).
    """
    raw = load_plain_pickle(data, source=source)
    r = _Reader(source, max_items)
    top = r.obj(raw, "snapshot")
    if "segments" not in top:
        raise r.fail("snapshot", "no 'segments': not a torch.cuda.memory snapshot")
    segments = [
        _segment(r, s, f"segments[{i}]") for i, s in enumerate(r.items(top["segments"], "segments"))
    ]
    traces: dict[int, list[TraceEntry]] = {}
    for dev, entries in enumerate(r.items(top.get("device_traces", []), "device_traces")):
        path = f"device_traces[{dev}]"
        traces[dev] = [
            _entry(r, e, dev, f"{path}[{i}]") for i, e in enumerate(r.items(entries, path))
        ]
    notes = r.items(top.get("external_annotations", []), "external_annotations")
    annotations = [_annotation(r, a, f"external_annotations[{i}]") for i, a in enumerate(notes)]
    settings = top.get("allocator_settings")
    kept = (
        {k: v for k, v in settings.items() if isinstance(v, str | int | float | bool)}
        if isinstance(settings, dict)
        else {}
    )
    return Snapshot(segments, traces, annotations, kept)


def _segment(r: _Reader, value: Any, path: str) -> Segment:
    s = r.obj(value, path)
    blocks = []
    for i, b in enumerate(r.items(s.get("blocks", []), f"{path}.blocks")):
        bp = f"{path}.blocks[{i}]"
        b = r.obj(b, bp)
        size = r.integer(b, "size", bp)
        blocks.append(
            Block(
                address=r.integer(b, "address", bp),
                size=size,
                requested_size=r.integer(b, "requested_size", bp, default=size),
                state=r.text(b, "state", bp),
                frames=r.frames(b, bp),
            )
        )
    return Segment(
        device=r.integer(s, "device", path),
        address=r.integer(s, "address", path),
        total_size=r.integer(s, "total_size", path),
        stream=r.integer(s, "stream", path, default=0),
        segment_type=r.text(s, "segment_type", path, default="large"),
        is_expandable=bool(s.get("is_expandable", False)),
        blocks=blocks,
    )


def _entry(r: _Reader, value: Any, device: int, path: str) -> TraceEntry:
    e = r.obj(value, path)
    time_us = e.get("time_us")
    return TraceEntry(
        device=device,
        action=r.text(e, "action", path),
        addr=r.integer(e, "addr", path, default=0),
        size=r.integer(e, "size", path, default=0),
        stream=r.integer(e, "stream", path, default=0),
        time_us=time_us if type(time_us) is int else None,
        frames=r.frames(e, path),
    )


def _annotation(r: _Reader, value: Any, path: str) -> Annotation:
    a = r.obj(value, path)
    return Annotation(
        device=r.integer(a, "device", path, default=0),
        stage=r.text(a, "stage", path),
        name=r.text(a, "name", path),
        time_us=r.integer(a, "time_us", path),
    )
