"""API shapes of SQL over a trace (`POST /traces/{id}/query`, `GET .../query/schema`).

Computed on request from the trace's dataset (`backend.services.query`); no tables.
"""

from typing import Any, Literal

from pydantic import Field
from sqlmodel import SQLModel

# Longest SQL text a query may carry: a hand-written query is a few hundred characters, and
# DuckDB's parser and planner grow with the text.
MAX_SQL_CHARS = 100_000
# The largest `limit` the request model admits; QUERY_MAX_ROWS (a setting) may lower it.
MAX_QUERY_ROWS = 1_000_000


class QueryRequest(SQLModel):
    sql: str = Field(
        min_length=1,
        max_length=MAX_SQL_CHARS,
        description="One read-only SELECT over the views of the query schema.",
    )
    limit: int = Field(
        default=1000,
        ge=1,
        le=MAX_QUERY_ROWS,
        description="Rows to return at most (QUERY_MAX_ROWS caps it); `truncated` says "
        "when the result had more.",
    )


class QueryResultPublic(SQLModel):
    columns: list[str]
    types: list[str] = Field(description="DuckDB type names, one per column.")
    rows: list[list[Any]] = Field(
        description="Values as JSON: integers exact, NaN and infinities as null, dates and "
        "times as ISO 8601 text, blobs as hex, lists and structs as JSON."
    )
    truncated: bool = Field(
        description="True when rows were cut: the result had more than `limit`, or its rows "
        "reached QUERY_MAX_ANSWER_BYTES."
    )
    truncated_by: Literal["rows", "bytes"] | None = Field(
        default=None,
        description="What cut the rows: `rows` (the `limit`) or `bytes` (the answer's size "
        "limit, QUERY_MAX_ANSWER_BYTES); null when nothing was cut.",
    )
    elapsed_ms: float


class QueryColumn(SQLModel):
    name: str
    type: str
    description: str


class QueryView(SQLModel):
    name: str
    description: str
    columns: list[QueryColumn]


class QuerySchemaPublic(SQLModel):
    trace_id: str
    views: list[QueryView]
