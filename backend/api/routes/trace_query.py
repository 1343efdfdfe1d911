"""`/api/v1/traces/{id}/query` and `/query/schema`: read-only SQL over one trace.

The SQL runs in a sandbox (`backend.services.query`) that sees only this trace's views;
reads need the same permission as every other trace read (the router's READ).
"""

from fastapi import APIRouter

from backend.api.deps import SessionDep
from backend.models.query import QueryRequest, QueryResultPublic, QuerySchemaPublic
from backend.services import query

router = APIRouter(prefix="/traces", tags=["query"])


@router.post("/{trace_id}/query")
def post_query(trace_id: str, body: QueryRequest, session: SessionDep) -> QueryResultPublic:
    """Run one SELECT over the trace's views (events, kernels, flows, counters, copies, args)."""
    return query.run_query(session=session, trace_id=trace_id, sql=body.sql, limit=body.limit)


@router.get("/{trace_id}/query/schema")
def get_query_schema(trace_id: str, session: SessionDep) -> QuerySchemaPublic:
    """The views a query may read, their columns, DuckDB types and meaning."""
    return query.get_query_schema(session=session, trace_id=trace_id)
