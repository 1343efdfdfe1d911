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

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ingest.errors import ParseError
from ingest.parsers._safe_pickle import load_plain_pickle

Frames = tuple[str, ...]  # "file:line function", innermost first
MAX_FIELD_CHARS = 4096  # a frame's name or file, a state or action: paths stay under it
_MAX_LINE = 1 << 63
# What one built value costs, roughly, in CPython: a list slot, and a record (a slots
# dataclass with its frames tuple). Used to count the cost of what a pickle expands to.
_SLOT_BYTES = 8
_RECORD_BYTES = 128
# The read may build this many bytes per byte of pickle (at least `_MIN_BUDGET`). A frame
# used again counts its whole text, though only its pointer is stored: the H200 sample
# builds 4.4 per byte; torch shares each distinct frame dict, so a long history of deep
# stacks costs 2 to 5 pickle bytes a frame of about 80 characters (16 to 40); a synthetic
# 100k-entry history whose 40-frame stacks are shared whole lists builds 63.
_BYTES_PER_PICKLE_BYTE = 128
_MIN_BUDGET = 64 << 20


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
    source: str = "snapshot"  # the file name, for errors about the views


class _Reader:
    """Typed field access that names the path of what is wrong, and counts what it builds.

    A pickle's memo lets one small object stand for many: a list that holds itself twice,
    26 deep, is 2^26 items to walk; one string shared by a million frames is a million
    copies once formatted. So every value is counted as it is built, a shared one each
    time it is used, against an item limit and a byte limit, and a frame's fields must be
    short strings or integers. A frame seen before is not formatted again (its text is
    kept by identity), but it still counts.
    """

    def __init__(self, source: str, max_items: int, max_bytes: int) -> None:
        self.source, self.left, self.bytes_left = source, max_items, max_bytes
        self.max_bytes = max_bytes
        self._frames: dict[int, str] = {}

    def fail(self, path: str, message: str) -> ParseError:
        return ParseError(message, source=self.source, location=path)

    def count(self, items: int, size: int, path: str) -> None:
        """Charge `items` list elements and `size` bytes of built records and text."""
        self.left -= items
        self.bytes_left -= size
        if self.left < 0:
            raise self.fail(path, "the snapshot has too many entries; refused as too large")
        if self.bytes_left < 0:
            raise self.fail(
                path,
                f"the snapshot expands past {self.max_bytes} bytes of records and stack text "
                "(shared objects count each time they are used); refused as too large",
            )

    def items(self, value: Any, path: str) -> Sequence[Any]:
        if not isinstance(value, list | tuple):
            raise self.fail(path, f"expected a list, found {type(value).__name__}")
        self.count(len(value), _SLOT_BYTES * len(value), path)
        return value

    def record(self, path: str) -> None:
        """Charge one built record (a block, an entry, an annotation)."""
        self.count(0, _RECORD_BYTES, path)

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
        if len(value) > MAX_FIELD_CHARS:
            raise self.fail(
                f"{path}.{key}", f"{len(value)} characters, over the {MAX_FIELD_CHARS} limit"
            )
        self.count(0, len(value), f"{path}.{key}")
        return value

    def frames(self, d: dict[str, Any], path: str) -> Frames:
        out = []
        for i, f in enumerate(self.items(d.get("frames", []), f"{path}.frames")):
            fp = f"{path}.frames[{i}]"
            line = self._frames.get(id(f))
            if line is None:
                f = self.obj(f, fp)
                name, file, no = (self.field(f, k, fp) for k in ("name", "filename", "line"))
                line = self._frames[id(f)] = f"{file}:{no} {name}"
            self.count(0, len(line), fp)
            out.append(line)
        return tuple(out)

    def field(self, frame: dict[str, Any], key: str, path: str) -> str:
        """A frame's name, file or line as text: a string or an integer, short."""
        value = frame.get(key, "?")
        if type(value) is int and -_MAX_LINE < value < _MAX_LINE:
            return str(value)
        if type(value) is str and len(value) <= MAX_FIELD_CHARS:
            return value
        found = (
            f"{len(value)} characters, over the {MAX_FIELD_CHARS} limit"
            if isinstance(value, str)
            else "an integer out of range"
            if isinstance(value, int)
            else f"{type(value).__name__}, not a string or an integer"
        )
        raise self.fail(f"{path}.{key}", f"a frame field must be short text; found {found}")


def load_snapshot(
    data: bytes, *, source: str, max_items: int = 20_000_000, max_bytes: int | None = None
) -> Snapshot:
    """Unpickle `data` without running anything and check it is a memory snapshot.

    Args:
        data: the pickle's bytes.
        source: the file name, for error messages.
        max_items: refuse snapshots with more list elements than this in total.
        max_bytes: refuse snapshots whose records and stack text, counted as built (a
            shared object each time it is used), pass this; default 128 bytes per byte
            of pickle, at least 64 MiB.

    Raises:
        ParseError: unsafe or unreadable pickle, a field of the wrong type (with its
            path), or a snapshot that expands past `max_items` or `max_bytes`.
    """
    raw = load_plain_pickle(data, source=source)
    budget = (
        max(_MIN_BUDGET, _BYTES_PER_PICKLE_BYTE * len(data)) if max_bytes is None else max_bytes
    )
    r = _Reader(source, max_items, budget)
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
    return Snapshot(segments, traces, annotations, _settings(r, top), source)


def _settings(r: _Reader, top: dict[str, Any]) -> dict[str, Any]:
    """The allocator settings that are plain values; they reach the views, so they count."""
    settings = top.get("allocator_settings")
    if not isinstance(settings, dict):
        return {}
    kept = {}
    for k, v in settings.items():
        if not isinstance(k, str) or len(k) > MAX_FIELD_CHARS:
            continue
        if isinstance(v, bool | float) or (type(v) is int and -_MAX_LINE < v < _MAX_LINE):
            size = 8
        elif isinstance(v, str) and len(v) <= MAX_FIELD_CHARS:
            size = len(v)
        else:
            continue
        r.count(1, len(k) + size, f"allocator_settings.{k}")
        kept[k] = v
    return kept


def _segment(r: _Reader, value: Any, path: str) -> Segment:
    s = r.obj(value, path)
    r.record(path)
    blocks = []
    for i, b in enumerate(r.items(s.get("blocks", []), f"{path}.blocks")):
        bp = f"{path}.blocks[{i}]"
        b = r.obj(b, bp)
        r.record(bp)
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
    r.record(path)
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
    r.record(path)
    return Annotation(
        device=r.integer(a, "device", path, default=0),
        stage=r.text(a, "stage", path),
        name=r.text(a, "name", path),
        time_us=r.integer(a, "time_us", path),
    )
