"""The `event` noun: normalised activities, bulk-loaded through SQLAlchemy Core."""

from typing import Any

from sqlalchemy import JSON, BigInteger, Column, ForeignKey, Index, Integer
from sqlmodel import Field, SQLModel

# SQLite only auto-increments an INTEGER PRIMARY KEY; PostgreSQL gets a real bigint.
_EventId = BigInteger().with_variant(Integer(), "sqlite")


class TraceEvent(SQLModel, table=True):
    __tablename__ = "events"
    __table_args__ = (Index("ix_events_trace_kind_start", "trace_id", "kind", "start_ns"),)

    id: int | None = Field(
        default=None, sa_column=Column(_EventId, primary_key=True, autoincrement=True)
    )
    trace_id: str = Field(
        sa_column=Column(ForeignKey("traces.id", ondelete="CASCADE"), nullable=False)
    )
    kind: str = Field(max_length=16)
    name: str
    start_ns: int = Field(sa_column=Column(BigInteger, nullable=False))
    dur_ns: int = Field(sa_column=Column(BigInteger, nullable=False))
    rank: int | None = None
    device: int | None = None
    stream: int | None = Field(default=None, sa_column=Column(BigInteger))
    pid: int | None = Field(default=None, sa_column=Column(BigInteger))
    tid: int | None = Field(default=None, sa_column=Column(BigInteger))
    correlation: int | None = Field(default=None, sa_column=Column(BigInteger))
    args: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
