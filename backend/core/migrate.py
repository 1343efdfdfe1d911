"""Alembic, driven from code so `perfdash db upgrade` and `serve` need no alembic.ini."""

from pathlib import Path

from alembic import command
from alembic.config import Config

from backend.core.config import get_settings

MIGRATIONS_DIR = Path(__file__).resolve().parents[1] / "migrations"


def alembic_config(url: str | None = None) -> Config:
    """An Alembic config pointing at our migrations and the given (or configured) database."""
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["url"] = url or get_settings().resolved_database_url
    return cfg


def upgrade_database(url: str | None = None) -> None:
    """Apply every migration up to head. Safe to run on every start."""
    command.upgrade(alembic_config(url), "head")
