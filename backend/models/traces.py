"""The `trace` noun: one uploaded file, its status and what was learnt parsing it."""

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import JSON, BigInteger, Column, DateTime, Integer, String, Text
from sqlmodel import Field, SQLModel

from backend.core.clock import utc_now


class TraceStatus(StrEnum):
    """Job state; the database, not Celery, is the source of truth."""

    QUEUED = "queued"
    PROCESSING = "processing"
    READY = "ready"
    FAILED = "failed"


class TraceBase(SQLModel):
    name: str = Field(max_length=512, index=True)
    project: str = Field(default="default", max_length=128, index=True)


class Trace(TraceBase, table=True):
    __tablename__ = "traces"

    id: str = Field(default_factory=lambda: uuid.uuid4().hex, primary_key=True, max_length=32)
    status: TraceStatus = Field(
        default=TraceStatus.QUEUED, sa_column=Column(String(16), nullable=False, index=True)
    )
    error: str | None = None
    format: str | None = Field(default=None, max_length=32, index=True)
    blob_sha256: str = Field(max_length=64, unique=True)
    size_bytes: int = Field(sa_column=Column(BigInteger, nullable=False, index=True))
    parser_version: str | None = Field(default=None, max_length=16)
    schema_version: int | None = None
    event_counts: dict[str, int] = Field(
        default_factory=dict, sa_column=Column(JSON, nullable=False)
    )
    devices: list[dict[str, Any]] = Field(
        default_factory=list, sa_column=Column(JSON, nullable=False)
    )
    # `TraceHeader.metadata`; `metadata` itself is taken by SQLAlchemy, and the API says `meta`.
    trace_metadata: dict[str, Any] = Field(
        default_factory=dict, sa_column=Column(JSON, nullable=False)
    )
    # The sum of `event_counts`, kept as a column so the list sorts by it in SQL.
    event_total: int = Field(
        default=0, sa_column=Column(BigInteger, nullable=False, default=0, index=True)
    )
    skipped_events: int = 0
    warnings: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    # The user's labels and note, set after upload (`PATCH /traces/{id}`); tags are normalized
    # (`backend.services.traces.edits`), so the list can match one as `"tag"` in the JSON text.
    tags: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    note: str | None = Field(default=None, sa_column=Column(Text))
    start_ns: int | None = Field(default=None, sa_column=Column(BigInteger))
    duration_ns: int | None = Field(default=None, sa_column=Column(BigInteger))
    summary: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    progress: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    # The step marker a user chose (ingest.steps); None: found by the rule. Kept across re-ingest.
    step_marker: str | None = Field(default=None, max_length=512)
    # The columnar dataset holding the events (`backend.services.datasets`); set only in the
    # transaction that marks the trace ready, so readers never see a half-written one.
    dataset: str | None = Field(default=None, max_length=64)
    # Claims by a worker; a trace whose workers keep dying is failed after a few (issue 10).
    ingest_attempts: int = Field(default=0, sa_column=Column(Integer, nullable=False, default=0))
    ingest_claimed_until: datetime | None = Field(
        default=None, sa_column=Column(DateTime(timezone=True))
    )
    created_at: datetime = Field(
        default_factory=utc_now,
        sa_column=Column(DateTime(timezone=True), nullable=False, index=True),
    )
    updated_at: datetime = Field(
        default_factory=utc_now, sa_column=Column(DateTime(timezone=True), nullable=False)
    )


class TracePublic(TraceBase):
    id: str
    status: TraceStatus
    error: str | None
    format: str | None
    blob_sha256: str
    size_bytes: int
    event_counts: dict[str, int]
    devices: list[dict[str, Any]]
    meta: dict[str, Any] = Field(
        description="The source's own metadata that ingest kept (`traces.trace_metadata`)."
    )
    skipped_events: int
    warnings: list[str]
    duration_ns: int | None
    progress: dict[str, Any] | None = None
    step_marker: str | None = None
    tags: list[str]
    note: str | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, trace: Trace) -> "TracePublic":
        """Build the public shape from a table row (the summary has its own endpoint)."""
        data = trace.model_dump(exclude={"trace_metadata", "summary"}, warnings=False)
        return cls(**data, meta=trace.trace_metadata)


class TracesPublic(SQLModel):
    items: list[TracePublic]
    count: int


class TraceSort(StrEnum):
    """What `GET /traces` sorts by (`order` gives the direction)."""

    NAME = "name"
    CREATED = "created"
    SIZE = "size"
    EVENTS = "events"
    STATUS = "status"


class TraceUpdate(SQLModel):
    """`PATCH /traces/{id}`: only the fields sent change; tags replace the old list."""

    model_config = {"extra": "forbid"}  # a misspelt field is a 422, not a silent no-op

    name: str | None = Field(default=None, min_length=1, max_length=512)
    tags: list[str] | None = Field(
        default=None, max_length=20, description="At most 20 tags of 1-40 characters each."
    )
    note: str | None = Field(default=None, max_length=4000, description="Free text; '' clears.")


class TraceIds(SQLModel):
    """`POST /traces/delete`: the traces to delete, all or none."""

    model_config = {"extra": "forbid"}

    ids: list[str] = Field(min_length=1, max_length=500)


class TraceFacets(SQLModel):
    """The values the list's filters can take now (for pickers)."""

    projects: list[str]
    formats: list[str]
    tags: list[str]


class TraceAccepted(SQLModel):
    id: str
    status: TraceStatus
    duplicate: bool = False
