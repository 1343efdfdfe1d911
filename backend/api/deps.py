"""FastAPI dependency aliases shared by the routes."""

from typing import Annotated

from fastapi import Depends, Query
from sqlmodel import Session

from backend.core.config import Settings, get_settings
from backend.core.db import get_session

SessionDep = Annotated[Session, Depends(get_session)]
SettingsDep = Annotated[Settings, Depends(get_settings)]

# Paging offsets are bounded so the schema says so and every database can bind the value
# (schemathesis sent 2**63, past SQLite's integer range). Past the last row a page is empty.
MAX_OFFSET = 1_000_000_000
Offset = Annotated[
    int, Query(ge=0, le=MAX_OFFSET, description="Rows to skip (at most 1,000,000,000).")
]
