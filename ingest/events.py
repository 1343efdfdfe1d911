"""The normalised event model that every parser produces and the backend stores.

All times are integer nanoseconds. Device work carries `device` (GPU ordinal) and
`stream`; CPU work carries `pid`/`tid`. `args` holds a whitelisted, JSON-safe subset of
the source's attributes (never environment-like metadata).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from itertools import repeat
from typing import Any

SCHEMA_VERSION = 1


class EventKind(StrEnum):
    """What an event is, independent of the source format."""

    KERNEL = "kernel"
    MEMCPY = "memcpy"
    MEMSET = "memset"
    RUNTIME = "runtime"
    CPU_OP = "cpu_op"
    ANNOTATION = "annotation"
    GPU_ANNOTATION = "gpu_annotation"
    MEMORY = "memory"
    SYNC = "sync"
    PYTHON = "python"


class TraceFormat(StrEnum):
    """Formats perfdash can detect. `PARSERS` in `ingest.registry` says which it reads."""

    KINETO = "torch_profiler"
    NSYS_SQLITE = "nsys_sqlite"
    NCU_CSV = "ncu_csv"
    ROCPROF_CSV = "rocprof_csv"
    ROCPROF_JSON = "rocprof_json"
    ROCPROFV3_CSV = "rocprofv3_csv"
    ROCPROFV3_JSON = "rocprofv3_json"
    ROCPD_SQLITE = "rocpd_sqlite"
    ROCPROF_COMPUTE = "rocprof_compute"
    TORCH_MEMORY_SNAPSHOT = "torch_memory_snapshot"
    XCTRACE_XML = "xctrace_xml"


@dataclass(slots=True)
class Event:
    """One normalised activity. Not frozen: frozen dataclasses cost about 2x to construct."""

    kind: EventKind
    name: str
    start_ns: int
    dur_ns: int
    device: int | None = None
    stream: int | None = None
    pid: int | None = None
    tid: int | None = None
    correlation: int | None = None
    args: dict[str, Any] | None = None
    rank: int | None = None


@dataclass(slots=True)
class EventBlock:
    """Many events of one kind as columns: a parser's fast path for its largest tables.

    Row i is `Event(kind, name[i], start_ns[i], dur_ns[i], device[i], ...)`; a column left
    None is None in every row. Consumers that take events one at a time read `events()`;
    the ingest's aggregates and bulk insert read the columns directly, so a million-row
    table never becomes a million `Event` objects.
    """

    kind: EventKind
    name: Sequence[str]
    start_ns: Sequence[int]
    dur_ns: Sequence[int]
    device: Sequence[int | None] | None = None
    stream: Sequence[int | None] | None = None
    pid: Sequence[int | None] | None = None
    tid: Sequence[int | None] | None = None
    correlation: Sequence[int | None] | None = None
    args: Sequence[dict[str, Any] | None] | None = None
    rank: Sequence[int | None] | None = None

    def __len__(self) -> int:
        return len(self.start_ns)

    def column(self, values: Sequence[Any] | None) -> Iterator[Any]:
        """One of this block's columns as an iterator, None-filled when absent."""
        return repeat(None, len(self)) if values is None else iter(values)

    def events(self) -> Iterator[Event]:
        """The rows as `Event` objects, in order."""
        c, kind = self.column, self.kind
        columns = zip(
            self.name, self.start_ns, self.dur_ns, c(self.device), c(self.stream), c(self.pid),
            c(self.tid), c(self.correlation), c(self.args), c(self.rank), strict=True,
        )  # fmt: skip
        for name, start, dur, device, stream, pid, tid, corr, args, rank in columns:
            yield Event(kind, name, start, dur, device, stream, pid, tid, corr, args, rank)


def flatten(items: Iterator[Event | EventBlock]) -> Iterator[Event]:
    """Events one at a time from a stream that may hold blocks."""
    for item in items:
        if isinstance(item, EventBlock):
            yield from item.events()
        else:
            yield item


@dataclass(slots=True)
class Device:
    """A GPU as the trace describes it."""

    index: int
    name: str = ""
    properties: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class TraceHeader:
    """What is known of the trace as a whole, beside its events, filled while they are read.

    `metadata` is the source's own key/values that perfdash keeps (stored as
    `traces.trace_metadata`, served as `meta`); the other fields are parsed facts.
    `memory_snapshot` is the memory snapshot tab's data (`ingest.memsnap.build_views`) when
    the trace is, or came with, a PyTorch memory snapshot; the ingest stores it in the
    trace's dataset, never in SQL. `flows` holds the source's own flow events (`Flows`),
    filled while the events are read, for formats that carry them.
    """

    format: TraceFormat
    devices: list[Device] = field(default_factory=list)
    rank: int | None = None
    world_size: int | None = None
    base_time_ns: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    memory_snapshot: dict[str, Any] | None = None
    flows: Flows | None = None


@dataclass(slots=True)
class ParseReport:
    """What the parser skipped and why (first warnings only), and how far it has read."""

    skipped: int = 0
    warnings: list[str] = field(default_factory=list)
    max_warnings: int = 20
    bytes_total: int = 0
    bytes_done: int = 0

    def skip(self, reason: str, count: int = 1) -> None:
        """Count `count` skipped records for one reason, keeping the first `max_warnings`
        reasons."""
        self.skipped += count
        if len(self.warnings) < self.max_warnings:
            self.warnings.append(reason)


FLOW_PHASES = ("s", "t", "f")


@dataclass(slots=True)
class Flows:
    """The source's own flow events (Chrome trace `ph` s/t/f: start, step, finish), as
    columns. They link events the source knew to be related (Kineto's forward op → its
    backward op, `fwdbwd`); the dataset keeps them so an export can write them back.

    Row i: flow `id[i]` of category `cat[i]` and `name[i]` has a `phase[i]` point at
    `ts_ns[i]` (integer ns, absolute) on thread (`pid[i]`, `tid[i]`) of `rank[i]`;
    `enclosing[i]` is the source's `bp: "e"` (bind to the enclosing slice, not the next).
    """

    id: list[int] = field(default_factory=list)
    cat: list[str] = field(default_factory=list)
    name: list[str] = field(default_factory=list)
    phase: list[str] = field(default_factory=list)
    ts_ns: list[int] = field(default_factory=list)
    pid: list[int | None] = field(default_factory=list)
    tid: list[int | None] = field(default_factory=list)
    enclosing: list[bool] = field(default_factory=list)
    rank: list[int | None] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.id)

    def add(
        self,
        id_: int,
        cat: str,
        name: str,
        phase: str,
        ts_ns: int,
        pid: int | None,
        tid: int | None,
        enclosing: bool,
        rank: int | None = None,
    ) -> None:
        """Append one flow point."""
        self.id.append(id_)
        self.cat.append(cat)
        self.name.append(name)
        self.phase.append(phase)
        self.ts_ns.append(ts_ns)
        self.pid.append(pid)
        self.tid.append(tid)
        self.enclosing.append(enclosing)
        self.rank.append(rank)

    def extend(self, other: Flows, rank: int | None) -> None:
        """Append every row of `other`, stamped with `rank` (a rank file's flows)."""
        for column in ("id", "cat", "name", "phase", "ts_ns", "pid", "tid", "enclosing"):
            getattr(self, column).extend(getattr(other, column))
        self.rank.extend([rank] * len(other))
