"""The traces list: one page of traces, filtered, searched and sorted in SQL, and the values
its filters can take.

Tags live in a JSON list column, matched as the quoted string `"tag"` in the column's text:
normalized tags (`backend.services.traces.edits`) hold no quote or backslash, so the match is
exact on SQLite and PostgreSQL alike, with no JSON operators of either.

Public surface: `TraceFilter`, `list_traces`, `list_facets`.
"""

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import String, cast
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import Session, col, func, select

from backend.models.traces import Trace, TraceSort, TraceStatus

# The column each sort key orders by; ties are broken by id, so pages never overlap.
_SORT_COLUMNS: dict[TraceSort, Any] = {
    TraceSort.NAME: func.lower(col(Trace.name)),
    TraceSort.CREATED: col(Trace.created_at),
    TraceSort.SIZE: col(Trace.size_bytes),
    TraceSort.EVENTS: col(Trace.event_total),
    TraceSort.STATUS: col(Trace.status),
}


@dataclass(frozen=True, slots=True)
class TraceFilter:
    """Which traces the list shows; None (or empty) leaves a field unfiltered.

    `q` is a case-insensitive substring of the name, with `%` and `_` taken literally;
    `created_from` is inclusive and `created_to` exclusive.
    """

    project: str | None = None
    format: str | None = None
    status: TraceStatus | None = None
    tag: str | None = None
    q: str | None = None
    created_from: datetime | None = None
    created_to: datetime | None = None

    def conditions(self) -> list[ColumnElement[bool]]:
        """The WHERE clauses this filter adds."""
        found: list[ColumnElement[bool]] = []
        if self.project:
            found.append(col(Trace.project) == self.project)
        if self.format:
            found.append(col(Trace.format) == self.format)
        if self.status:
            found.append(col(Trace.status) == self.status)
        if self.tag:
            found.append(cast(col(Trace.tags), String).contains(f'"{self.tag}"', autoescape=True))
        if self.q:
            found.append(func.lower(col(Trace.name)).contains(self.q.lower(), autoescape=True))
        if self.created_from:
            found.append(col(Trace.created_at) >= self.created_from)
        if self.created_to:
            found.append(col(Trace.created_at) < self.created_to)
        return found


def list_traces(
    *,
    session: Session,
    limit: int,
    offset: int,
    where: TraceFilter | None = None,
    sort: TraceSort = TraceSort.CREATED,
    descending: bool = True,
) -> tuple[list[Trace], int]:
    """One page of the traces `where` selects, in the order asked for (newest first by
    default), and how many there are in all.

    Args:
        limit: rows in the page (the route bounds it).
        offset: rows skipped; past the last row the page is empty.

    Returns:
        The page's rows and the count over every page.
    """
    conditions = (where or TraceFilter()).conditions()
    key = _SORT_COLUMNS[sort]
    order = [key.desc(), col(Trace.id).desc()] if descending else [key.asc(), col(Trace.id)]
    query = select(Trace).where(*conditions).order_by(*order).offset(offset).limit(limit)
    counter = select(func.count()).select_from(Trace).where(*conditions)
    return list(session.exec(query)), session.exec(counter).one()


def list_facets(*, session: Session) -> tuple[list[str], list[str], list[str]]:
    """The distinct projects, formats and tags of all traces, each sorted.

    The tags are gathered in Python from the rows that have any: no portable SQL unnests a
    JSON list, and the rows read are one short column.
    """
    projects = session.exec(select(Trace.project).distinct().order_by(col(Trace.project)))
    formats = session.exec(select(Trace.format).where(col(Trace.format).is_not(None)).distinct())
    tagged = session.exec(select(Trace.tags).where(cast(col(Trace.tags), String) != "[]"))
    tags = {t for row in tagged for t in row or []}
    return list(projects), sorted(f for f in formats if f), sorted(tags)
