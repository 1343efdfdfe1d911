"""Run a user's SQL over one trace, inside the sandbox and the limits.

Users are not trusted: the query must be exactly one SELECT (`duckdb.extract_statements`
says which type DuckDB parsed), it runs in a fresh locked database that sees only this
trace's events (`sandbox.py`), in a child process (`child.py`) whose address space is
capped and which is killed past the deadline; inside it a timer interrupts DuckDB at
QUERY_TIMEOUT_S and DuckDB stops at QUERY_MEMORY_LIMIT. At most QUERY_CONCURRENCY run at
once per API process (the rest get 429, so runaway queries cannot hold every request
thread), and only `limit + 1` rows are fetched, the last only to tell whether rows were cut,
and no more than QUERY_MAX_ANSWER_BYTES of them as JSON (`truncated_by` says which cut).

Public surface: `run_query`, `get_query_schema`.
"""

from __future__ import annotations

import threading
from functools import lru_cache

import duckdb
from sqlmodel import Session

from backend.core.config import Settings, get_settings
from backend.models.query import QueryColumn, QueryResultPublic, QuerySchemaPublic, QueryView
from backend.models.traces import TraceStatus
from backend.services.datasets import events_file
from backend.services.errors import InvalidInputError, TooManyRequestsError
from backend.services.query.child import Limits, Outcome, run_in_child
from backend.services.query.sandbox import open_sandbox
from backend.services.query.views import VIEWS
from backend.services.traces import get_trace


def run_query(*, session: Session, trace_id: str, sql: str, limit: int) -> QueryResultPublic:
    """Answer one SELECT over the trace's views.

    Raises:
        NotFoundError: no such trace.
        InvalidInputError: the trace is not ready, `limit` is over QUERY_MAX_ROWS, the SQL
            is not exactly one SELECT, reaches outside the trace, fails, or passes the
            time or memory limit.
        TooManyRequestsError: QUERY_CONCURRENCY queries are already running.
    """
    settings = get_settings()
    trace = get_trace(session=session, trace_id=trace_id)
    if trace.status != TraceStatus.READY:
        raise InvalidInputError(
            f"trace {trace_id} is {trace.status}, not ready: query it once ingested"
        )
    if limit > settings.query_max_rows:
        raise InvalidInputError(
            f"limit {limit} is over the {settings.query_max_rows}-row maximum (QUERY_MAX_ROWS)"
        )
    check_statement(sql)
    path = events_file(trace)
    slots = _slots(settings.query_concurrency)
    if not slots.acquire(blocking=False):
        raise TooManyRequestsError(
            f"{settings.query_concurrency} queries are already running (QUERY_CONCURRENCY)", 1.0
        )
    try:
        outcome = run_in_child(path, sql, _limits(settings, limit))
    finally:
        slots.release()
    return _answer(outcome, settings)


def _limits(settings: Settings, rows: int) -> Limits:
    return Limits(
        rows=rows,
        answer_bytes=settings.query_max_answer_bytes,
        threads=settings.query_threads,
        memory=settings.query_memory_limit,
        timeout_s=settings.query_timeout_s,
    )


def check_statement(sql: str) -> None:
    """Refuse anything but exactly one SELECT, naming what was sent.

    Raises:
        InvalidInputError: no statement, several, or one of another type, or SQL DuckDB
            cannot parse.
    """
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as e:
        raise InvalidInputError(f"the SQL does not parse: {e}") from e
    if len(statements) != 1:
        raise InvalidInputError(f"send exactly one SELECT statement, not {len(statements)}")
    kind = statements[0].type
    if kind != duckdb.StatementType.SELECT:
        name = str(kind).rsplit(".", 1)[-1].replace("_STATEMENT", "")
        raise InvalidInputError(f"only SELECT is allowed: this is a {name} statement")


def _answer(outcome: Outcome, settings: Settings) -> QueryResultPublic:
    """The child's outcome as the API's answer, or the 4xx that says what went wrong."""
    if outcome[0] == "ok":
        _, columns, types, rows, cut, elapsed_ms = outcome
        return QueryResultPublic(
            columns=columns,
            types=types,
            rows=rows,
            truncated=cut is not None,
            truncated_by=cut,
            elapsed_ms=elapsed_ms,
        )
    _, kind, message = outcome
    if kind == "timeout":
        raise InvalidInputError(
            f"the query ran past the {settings.query_timeout_s:g} s limit and was stopped "
            "(QUERY_TIMEOUT_S)"
        )
    if kind == "memory":
        raise InvalidInputError(
            f"the query needs more than {settings.query_memory_limit} of memory "
            f"(QUERY_MEMORY_LIMIT): {message}"
        )
    if kind == "permission":
        raise InvalidInputError(
            f"a query may read only this trace's views, no files or URLs: {message}"
        )
    if kind == "crashed":
        raise InvalidInputError(f"the query's process gave no answer: {message}")
    raise InvalidInputError(f"the query failed: {message}")


def get_query_schema(*, session: Session, trace_id: str) -> QuerySchemaPublic:
    """The views a query of this trace may read, with DuckDB's type of each column.

    Raises:
        NotFoundError: no such trace.
    """
    get_trace(session=session, trace_id=trace_id)
    return QuerySchemaPublic(trace_id=trace_id, views=list(_views()))


@lru_cache(maxsize=1)
def _views() -> tuple[QueryView, ...]:
    """The views' columns and types: the same for every trace, so read once from a sandbox
    over an empty table."""
    con = open_sandbox(None, threads=1, memory_limit="256MB")
    try:
        found = con.execute(
            "SELECT table_name, column_name, data_type FROM duckdb_columns()"
        ).fetchall()
    finally:
        con.close()
    types = {(table, column): kind for table, column, kind in found}
    return tuple(
        QueryView(
            name=v.name,
            description=v.description,
            columns=[
                QueryColumn(name=c, type=types[(v.name, c)], description=d)
                for c, d in v.columns.items()
            ],
        )
        for v in VIEWS
    )


@lru_cache(maxsize=4)
def _slots(size: int) -> threading.BoundedSemaphore:
    """The process's running-query slots (one semaphore per configured size)."""
    return threading.BoundedSemaphore(size)
