"""The `trace summary` API shape: the `ingest.summary.Summary` stored on the trace row."""

from typing import Any

from sqlmodel import Field, SQLModel


class TraceSummaryPublic(SQLModel):
    trace_id: str
    status: str
    summary: dict[str, Any] | None = Field(
        description="The `ingest.summary.Summary` computed at ingest; null until ready."
    )
