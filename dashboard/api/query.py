"""API calls of the Query tab: SQL over one trace, and the views it may read.

Public surface: `run_query`, `get_query_schema`, `QueryResult`, `QuerySchema`,
`QueryView`, `QueryColumn`.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

from dashboard.api.client import ApiClient

__all__ = [
    "QueryColumn",
    "QueryResult",
    "QuerySchema",
    "QueryView",
    "get_query_schema",
    "run_query",
]

# Longer than the API's default query time limit (10 s, QUERY_TIMEOUT_S), so the API's own
# answer, which names the limit, arrives rather than a client timeout.
QUERY_TIMEOUT_S = 60.0


class QueryResult(TypedDict):
    columns: list[str]
    types: list[str]
    rows: list[list[Any]]
    truncated: bool
    truncated_by: NotRequired[Literal["rows", "bytes"] | None]
    elapsed_ms: float


class QueryColumn(TypedDict):
    name: str
    type: str
    description: str


class QueryView(TypedDict):
    name: str
    description: str
    columns: list[QueryColumn]


class QuerySchema(TypedDict):
    trace_id: str
    views: list[QueryView]


def run_query(client: ApiClient, trace_id: str, sql: str, limit: int) -> QueryResult:
    """One SELECT over the trace's views; the API's 4xx detail comes back as ApiError."""
    body = {"sql": sql, "limit": limit}
    result: QueryResult = client.post(
        f"/traces/{trace_id}/query", json=body, timeout_s=QUERY_TIMEOUT_S
    )
    return result


def get_query_schema(client: ApiClient, trace_id: str) -> QuerySchema:
    """The views a query of this trace may read, with their columns."""
    schema: QuerySchema = client.get(f"/traces/{trace_id}/query/schema")
    return schema
