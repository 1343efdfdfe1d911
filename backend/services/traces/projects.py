"""The projects traces are filed under, for the upload form's choice of project."""

from sqlmodel import Session, col, func, select

from backend.models import Trace
from backend.models.projects import ProjectPublic


def list_projects(*, session: Session, limit: int) -> tuple[list[ProjectPublic], int]:
    """Projects with their trace count, the most recently uploaded to first; and how many
    projects there are in all."""
    last = func.max(Trace.created_at)
    rows = session.exec(
        select(Trace.project, func.count(), last)
        .group_by(col(Trace.project))
        .order_by(last.desc(), col(Trace.project))
        .limit(limit)
    ).all()
    total = session.exec(select(func.count(func.distinct(Trace.project)))).one()
    items = [ProjectPublic(name=p, traces=n, last_upload_at=t) for p, n, t in rows]
    return items, total
