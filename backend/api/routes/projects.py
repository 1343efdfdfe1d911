"""`/api/v1/projects`: the projects traces are filed under (the upload form lists them)."""

from typing import Annotated

from fastapi import APIRouter, Query

from backend.api.deps import SessionDep
from backend.models.projects import ProjectsPublic
from backend.services import traces as service

router = APIRouter(prefix="/projects", tags=["traces"])


@router.get("")
def list_projects(
    session: SessionDep, limit: Annotated[int, Query(ge=1, le=1000)] = 200
) -> ProjectsPublic:
    """Projects with their trace count, the most recently uploaded to first."""
    items, count = service.list_projects(session=session, limit=limit)
    return ProjectsPublic(items=items, count=count)
