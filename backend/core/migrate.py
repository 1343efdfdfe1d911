"""Alembic, driven from code so `perfdash db upgrade` and `serve` need no alembic.ini."""

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from backend.core.config import get_settings
from backend.core.db import make_engine

MIGRATIONS_DIR = Path(__file__).resolve().parents[1] / "migrations"


def alembic_config(url: str | None = None) -> Config:
    """An Alembic config pointing at our migrations and the given (or configured) database."""
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["url"] = url or get_settings().resolved_database_url
    return cfg


def upgrade_database(url: str | None = None, revision: str = "head") -> None:
    """Apply every migration up to `revision` (head by default). Safe to run on every start."""
    command.upgrade(alembic_config(url), revision)


def current_revision(url: str | None = None) -> str | None:
    """The revision the database is at; None for a database no migration has touched."""
    engine = make_engine(url or get_settings().resolved_database_url)
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    finally:
        engine.dispose()


def is_applied(revision: str, url: str | None = None) -> bool:
    """Whether the database is at `revision` or past it."""
    current = current_revision(url)
    if current is None:
        return False
    script = ScriptDirectory.from_config(alembic_config(url))
    return any(r.revision == revision for r in script.iterate_revisions(current, "base"))
