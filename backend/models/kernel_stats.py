"""The `kernel stats` noun: per-kernel aggregates computed once at ingest.

Two tables. `kernel_stats` has one row per kernel name (its `rank` is the position by total
time, as the API has always sorted it). `kernel_group_stats` has one row per stream,
device, distributed rank or launching CPU op. They are separate tables, not one table with
a `group_by` column, because the rows differ in key and in columns: a group row has a
stream/device/rank, a count of distinct kernels and its top kernel, none of which a name row
has, and the name rows keep their original key and queries untouched.
"""

from enum import StrEnum

from sqlalchemy import JSON, BigInteger, Column, ForeignKey, String, Text
from sqlmodel import Field, SQLModel

# The one meaning of `pct` on kernel rows; pages label it "% of kernel time".
PCT_DESCRIPTION = (
    "Share of the trace's kernel time (the sum of every kernel's duration), in percent: "
    "not of the GPU span or busy time."
)


class KernelGroupBy(StrEnum):
    """How `/kernels` groups its rows; `name` reads `kernel_stats`, the rest the group table."""

    NAME = "name"
    STREAM = "stream"
    DEVICE = "device"
    RANK = "rank"
    CPU_OP = "cpu_op"


class KernelSort(StrEnum):
    """Sort keys of `/kernels`: numbers largest first, `name` A to Z."""

    TOTAL = "total"
    COUNT = "count"
    MEAN = "mean"
    MAX = "max"
    P95 = "p95"
    NAME = "name"


class KernelStatBase(SQLModel):
    name: str
    count: int
    total_ns: int = Field(sa_column=Column(BigInteger, nullable=False))
    mean_ns: int = Field(sa_column=Column(BigInteger, nullable=False))
    min_ns: int = Field(sa_column=Column(BigInteger, nullable=False))
    max_ns: int = Field(sa_column=Column(BigInteger, nullable=False))
    pct: float = Field(description=PCT_DESCRIPTION)
    p50_ns: int | None = Field(default=None, sa_column=Column(BigInteger))
    p95_ns: int | None = Field(default=None, sa_column=Column(BigInteger))
    category: str | None = Field(default=None, sa_column=Column(String(16)))
    grid: list[int] | None = Field(default=None, sa_column=Column(JSON))
    block: list[int] | None = Field(default=None, sa_column=Column(JSON))
    registers_per_thread: int | None = None
    shared_memory_bytes: int | None = Field(default=None, sa_column=Column(BigInteger))
    occupancy_pct: float | None = None


class KernelStatRecord(KernelStatBase, table=True):
    __tablename__ = "kernel_stats"

    trace_id: str = Field(
        sa_column=Column(ForeignKey("traces.id", ondelete="CASCADE"), primary_key=True)
    )
    rank: int = Field(primary_key=True, description="Position by total time, 0 = largest.")


class KernelStatPublic(KernelStatBase):
    pass


class KernelGroupStatBase(SQLModel):
    group_by: str = Field(sa_column=Column(String(16), primary_key=True))
    key: str = Field(sa_column=Column(Text, nullable=False))
    device: int | None = None
    stream: int | None = Field(default=None, sa_column=Column(BigInteger))
    rank: int | None = Field(default=None, description="Distributed rank, when known.")
    kernels: int = Field(description="Distinct kernel names in the group.")
    top_kernel: str = Field(sa_column=Column(Text, nullable=False))
    count: int
    total_ns: int = Field(sa_column=Column(BigInteger, nullable=False))
    mean_ns: int = Field(sa_column=Column(BigInteger, nullable=False))
    min_ns: int = Field(sa_column=Column(BigInteger, nullable=False))
    max_ns: int = Field(sa_column=Column(BigInteger, nullable=False))
    p50_ns: int = Field(sa_column=Column(BigInteger, nullable=False))
    p95_ns: int = Field(sa_column=Column(BigInteger, nullable=False))
    pct: float = Field(description=PCT_DESCRIPTION)


class KernelGroupStatRecord(KernelGroupStatBase, table=True):
    __tablename__ = "kernel_group_stats"

    trace_id: str = Field(
        sa_column=Column(ForeignKey("traces.id", ondelete="CASCADE"), primary_key=True)
    )
    position: int = Field(primary_key=True, description="Position by total time in group_by.")


class KernelGroupStatPublic(KernelGroupStatBase):
    pass


class KernelStatsPublic(SQLModel):
    trace_id: str
    items: list[KernelStatPublic] | list[KernelGroupStatPublic]
    count: int = Field(description="Rows matching `q` (all rows without it).")
    total_kernel_ns: int = Field(description="Kernel time of the whole trace.")
    limit: int = 10
    offset: int = 0
    sort: KernelSort = KernelSort.TOTAL
    group: KernelGroupBy = KernelGroupBy.NAME
    q: str | None = None
