"""API shapes of the projects traces are filed under (a project is a trace's label, no table)."""

from datetime import datetime

from sqlmodel import SQLModel


class ProjectPublic(SQLModel):
    name: str
    traces: int
    last_upload_at: datetime


class ProjectsPublic(SQLModel):
    items: list[ProjectPublic]
    count: int
