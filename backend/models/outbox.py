"""The `outbox` noun: a task message written in the transaction of the state change it
announces, so that a broker outage delays the message instead of losing it.

A row exists only until its message reached the broker; `next_attempt_at` is both when
the sweeper may send it and the lease of whoever is sending it now.
"""

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Column, DateTime, Integer, Text
from sqlmodel import Field, SQLModel

from backend.core.clock import utc_now

_BigId = BigInteger().with_variant(Integer(), "sqlite")


class OutboxMessage(SQLModel, table=True):
    __tablename__ = "outbox"

    id: int | None = Field(default=None, sa_column=Column(_BigId, primary_key=True))
    task: str = Field(max_length=64)
    args: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    queue: str = Field(max_length=64)
    # Celery `send_task` options: soft_time_limit, time_limit.
    options: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    # The task must not run before this (a retry's backoff); sent as a countdown.
    not_before: datetime | None = Field(default=None, sa_column=Column(DateTime(timezone=True)))
    next_attempt_at: datetime = Field(
        default_factory=utc_now,
        sa_column=Column(DateTime(timezone=True), nullable=False, index=True),
    )
    attempts: int = 0
    last_error: str | None = Field(default=None, sa_column=Column(Text))
    created_at: datetime = Field(
        default_factory=utc_now, sa_column=Column(DateTime(timezone=True), nullable=False)
    )
