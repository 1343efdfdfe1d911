"""FastAPI dependency aliases shared by the routes."""

from typing import Annotated

from fastapi import Depends
from sqlmodel import Session

from backend.core.config import Settings, get_settings
from backend.core.db import get_session

SessionDep = Annotated[Session, Depends(get_session)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
