"""Database engine and sessions. The same code runs on SQLite and PostgreSQL."""

from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine, make_url
from sqlmodel import Session, create_engine

from backend.core.config import get_settings


def make_engine(url: str) -> Engine:
    """Create an engine; on SQLite turn on WAL, foreign keys and a busy timeout.

    WAL lets the pages read while a worker bulk-loads a trace; the busy timeout makes a
    second writer wait instead of failing with "database is locked".
    """
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return create_engine(url, pool_pre_ping=True)
    if parsed.database:
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 60})

    @event.listens_for(engine, "connect")
    def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    return engine


@lru_cache
def get_engine() -> Engine:
    """The process-wide engine for the configured database."""
    return make_engine(get_settings().resolved_database_url)


def get_session() -> Iterator[Session]:
    """FastAPI dependency: one session per request."""
    with Session(get_engine()) as session:
        yield session
