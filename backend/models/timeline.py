"""The `timeline` noun: the level-of-detail index built at ingest, and the timeline API shapes.

The pyramid of busy blocks (per lane and level, busy intervals merged across gaps shorter
than the level's width: 8 µs, 64 µs, ... growing 8x) and the GPU idle gaps live in the
trace's dataset (`backend.services.datasets`: `blocks.parquet`, `gaps.parquet`).

Tables (all keyed by trace, deleted with it):
- `timeline_lanes`: one row per drawable lane (GPU stream, CPU thread, annotation source),
  plus hidden per-device lanes that feed the utilisation strip.
- `timeline_spans`: events longer than `LONG_NS`, binned by length (`dclass`), so the
  raw-event path can use a short look-back on the events for everything else.
- `timeline_names`: distinct names with counts and first/last time, for search. Keyed by
  a hash of the name (`name_key`), since a btree row cannot hold a name over ~2.7 KB on
  PostgreSQL and kernel names are user input.
"""

from hashlib import blake2b
from typing import Any, Literal

from pydantic import BaseModel
from sqlalchemy import JSON, BigInteger, Column, ForeignKey, Integer, SmallInteger, Table
from sqlmodel import Field, SQLModel

from backend.models.kernel_stats import PCT_DESCRIPTION


def table_of(model: type[SQLModel]) -> Table:
    """The Core table of a SQLModel class, for typed Core queries (SQLModel leaves
    `__table__` untyped)."""
    table: Table = model.__table__  # type: ignore[attr-defined]
    return table


def _trace_fk() -> Any:
    return Column(ForeignKey("traces.id", ondelete="CASCADE"), primary_key=True)


class TimelineLane(SQLModel, table=True):
    __tablename__ = "timeline_lanes"

    trace_id: str = Field(sa_column=_trace_fk())
    lane: int = Field(primary_key=True, description="Display order, 0 = top.")
    family: str = Field(max_length=16)
    label: str = Field(max_length=200)
    rank: int | None = None
    device: int | None = None
    stream: int | None = Field(default=None, sa_column=Column(BigInteger))
    pid: int | None = Field(default=None, sa_column=Column(BigInteger))
    tid: int | None = Field(default=None, sa_column=Column(BigInteger))
    hidden: bool = False
    events: int = 0
    busy_ns: int = Field(default=0, sa_column=Column(BigInteger, nullable=False))
    first_ns: int = Field(default=0, sa_column=Column(BigInteger, nullable=False))
    last_ns: int = Field(default=0, sa_column=Column(BigInteger, nullable=False))
    level_blocks: list[int] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    # Deepest 0-based nesting of the lane's events, as raw windows stack them. A server
    # default only: an insert without it (a re-ingest below revision 0016) leaves it out.
    max_depth: int = Field(default=0, sa_column=Column(Integer, nullable=False, server_default="0"))


class TimelineSpan(SQLModel, table=True):
    __tablename__ = "timeline_spans"

    trace_id: str = Field(sa_column=_trace_fk())
    dclass: int = Field(sa_column=Column(SmallInteger, primary_key=True))
    start_ns: int = Field(sa_column=Column(BigInteger, primary_key=True))
    event_id: int = Field(sa_column=Column(BigInteger, primary_key=True))
    lane: int
    end_ns: int = Field(sa_column=Column(BigInteger, nullable=False))


def name_key(name: str) -> str:
    """The key of a name in `timeline_names`: 128 bits of BLAKE2b, which no one can make
    two names share (a short hash or MD5 could be collided on purpose).

    >>> name_key("gemm")
    '48414134ed647dd5181a731ae41f3e29'
    """
    return blake2b(name.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


class TimelineName(SQLModel, table=True):
    __tablename__ = "timeline_names"

    trace_id: str = Field(sa_column=_trace_fk())
    kind: str = Field(primary_key=True, max_length=16)
    name_key: str = Field(
        primary_key=True, max_length=32, description="`name_key(name)`: a hash of the name."
    )
    name: str
    count: int
    total_ns: int = Field(sa_column=Column(BigInteger, nullable=False))
    first_ns: int = Field(sa_column=Column(BigInteger, nullable=False))
    last_ns: int = Field(sa_column=Column(BigInteger, nullable=False))


# ---- API shapes -------------------------------------------------------------------------
# The window shapes are plain pydantic models: SQLModel's __init__ cost ~50 µs per item,
# a quarter of a 5,000-item response's time.


class LanePublic(BaseModel):
    lane: int
    family: str
    group: str
    label: str
    rank: int | None
    device: int | None
    stream: int | None
    pid: int | None
    tid: int | None
    events: int
    busy_ns: int
    max_depth: int = Field(
        description="Deepest 0-based nesting of the lane's events (rows to reserve: + 1)."
    )


class TimelineItem(BaseModel):
    lane: int
    start_ns: int
    dur_ns: int
    name: str
    category: str
    count: int = 1
    busy_ns: int
    id: int | None = None
    depth: int = 0
    args: dict[str, Any] | None = None
    mix: list[int] | None = Field(
        default=None,
        description=(
            "Blocks of GPU lanes: summed event durations (ns) by category, in the order "
            "compute, communication, memcpy, memset. None for raw events, other lanes, "
            "and blocks of datasets indexed before the mix was stored."
        ),
    )


class TimelineWindow(BaseModel):
    trace_id: str
    start_ns: int
    end_ns: int
    trace_start_ns: int
    trace_end_ns: int
    mode: str = Field(description="'events' (individual events) or 'blocks' (merged busy).")
    level: int | None = Field(description="Pyramid level of the blocks; None for events.")
    merge_gap_ns: int | None
    max_items: int
    estimated_events: int
    truncated: bool
    lanes: list[LanePublic]
    items: list[TimelineItem]


class TimelineLanes(BaseModel):
    trace_id: str
    trace_start_ns: int
    trace_end_ns: int
    lanes: list[LanePublic]


class OverviewBin(SQLModel):
    start_ns: int
    end_ns: int
    utilization: float


class TimelineOverview(SQLModel):
    trace_id: str
    trace_start_ns: int
    trace_end_ns: int
    devices: int
    level: int | None
    bins: list[OverviewBin]


class StepWindow(SQLModel):
    step: int
    name: str
    start_ns: int
    end_ns: int


class StepMarkerOption(SQLModel):
    marker: str  # an annotation family, e.g. "train_step_N" (ingest.steps.marker_of)
    count: int
    top_level: bool  # no range of it lies inside another annotation range of its thread


class StepsPublic(SQLModel):
    trace_id: str
    items: list[StepWindow]
    marker: str | None = None  # the marker these steps come from; None: no steps found
    marker_source: str | None = None  # "ProfilerStep", "auto", "user" or None
    chosen: str | None = None  # the marker a user chose for this trace (kept), if any
    options: list[StepMarkerOption] = []  # annotation families a user may choose


class StepMarkerChoice(SQLModel):
    marker: str | None = Field(
        default=None, min_length=1, max_length=512,
        description="An annotation name or family (train_step_N, train_step); null: automatic.",
    )  # fmt: skip


class NameMatch(SQLModel):
    name: str
    kind: str
    count: int
    total_ns: int


class EventWindow(SQLModel):
    id: int
    lane: int | None
    name: str
    start_ns: int
    end_ns: int


class SearchResult(SQLModel):
    trace_id: str
    query: str
    names: list[NameMatch]
    matches: list[EventWindow]
    truncated: bool


class GapPublic(SQLModel):
    lane: int
    label: str
    start_ns: int
    end_ns: int
    dur_ns: int
    cause: str
    cpu_runtime_ns: int
    cpu_sync_ns: int
    next_event_id: int | None
    launch_event_id: int | None


class GapsPublic(SQLModel):
    trace_id: str
    min_ns: int
    count: int
    rule: str
    items: list[GapPublic]


class EventPublic(SQLModel):
    id: int
    kind: str
    name: str
    start_ns: int
    dur_ns: int
    rank: int | None
    device: int | None
    stream: int | None
    pid: int | None
    tid: int | None
    correlation: int | None
    args: dict[str, Any] | None
    lane: int | None = None
    lane_label: str | None = None


class KernelStatsRow(SQLModel):
    name: str
    count: int
    total_ns: int
    mean_ns: int
    min_ns: int
    max_ns: int
    pct: float = Field(description=PCT_DESCRIPTION)


class EventDetail(SQLModel):
    trace_id: str
    event: EventPublic
    runtime: EventPublic | None = Field(description="The CPU runtime call that launched it.")
    cpu_op: EventPublic | None = Field(description="The innermost CPU op around that call.")
    kernel_stats: KernelStatsRow | None


# ---- Shapes for the browser renderer: flows, area selection, counter tracks ----------------

INT64_MAX = 2**63 - 1  # times are int64 ns in the dataset; a bound past it cannot be bound


class Flow(BaseModel):
    kind: Literal["launch", "collective"] = Field(
        description="'launch': a runtime call to the GPU work it launched; 'collective': a "
        "communication kernel to the same collective on another rank."
    )
    from_id: int
    from_lane: int | None = Field(description="Lane id (`lanes`); None if not drawn.")
    from_ns: int = Field(description="Start of the source event.")
    to_id: int
    to_lane: int | None
    to_ns: int = Field(description="Start of the target event.")


class EventFlows(BaseModel):
    trace_id: str
    event_id: int
    items: list[Flow]
    truncated: bool = Field(description="More flows than `limit` exist.")


class AreaName(BaseModel):
    name: str
    category: str
    count: int
    total_ns: int = Field(description="Time inside the range (each event clipped to it).")
    wall_ns: int = Field(description="Summed full durations of the events.")
    avg_ns: int = Field(description="wall_ns // count.")


class AreaCategory(BaseModel):
    category: str
    count: int
    total_ns: int


class AreaSummary(BaseModel):
    trace_id: str
    start_ns: int
    end_ns: int
    names: list[AreaName]
    categories: list[AreaCategory]
    truncated: bool = Field(description="More names than `limit` exist.")


class CounterTrack(BaseModel):
    key: str
    label: str
    kind: Literal["gpu_utilization", "memory_allocated", "memory_reserved"]
    unit: Literal["fraction", "bytes"]
    rank: int | None
    device: int | None
    values: list[float | None] = Field(description="One per bin; None before any sample.")


class Counters(BaseModel):
    trace_id: str
    start_ns: int
    end_ns: int
    bins: int
    tracks: list[CounterTrack]
