"""The `kernel stats` noun: per-kernel aggregates computed once at ingest."""

from sqlalchemy import BigInteger, Column, ForeignKey
from sqlmodel import Field, SQLModel


class KernelStatBase(SQLModel):
    name: str
    count: int
    total_ns: int = Field(sa_column=Column(BigInteger, nullable=False))
    mean_ns: int = Field(sa_column=Column(BigInteger, nullable=False))
    min_ns: int = Field(sa_column=Column(BigInteger, nullable=False))
    max_ns: int = Field(sa_column=Column(BigInteger, nullable=False))
    pct: float


class KernelStatRecord(KernelStatBase, table=True):
    __tablename__ = "kernel_stats"

    trace_id: str = Field(
        sa_column=Column(ForeignKey("traces.id", ondelete="CASCADE"), primary_key=True)
    )
    rank: int = Field(primary_key=True, description="Position by total time, 0 = largest.")


class KernelStatPublic(KernelStatBase):
    pass


class KernelStatsPublic(SQLModel):
    trace_id: str
    items: list[KernelStatPublic]
    count: int
    total_kernel_ns: int
