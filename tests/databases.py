"""A new database for every test, on SQLite and on the local PostgreSQL.

PostgreSQL is real (127.0.0.1:5432, trust auth, maintenance database `test`, or
PERFDASH_TEST_POSTGRES_URL). Migrating a database takes 0.5-3 s, so the migrations run from
empty once per session and engine (`MigratedTemplates`) and each test gets a copy of that
database: SQLite's backup API, or `CREATE DATABASE ... TEMPLATE` on PostgreSQL (about
0.4 s, mostly the server's fsyncs; making copies ahead in a thread saved nothing, since the
server's disk is the bottleneck). Every test still gets a database no other test touched.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
from sqlalchemy.engine import make_url

from backend.core.db import get_engine
from backend.core.migrate import upgrade_database

POSTGRES_URL = os.environ.get(
    "PERFDASH_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)


def postgres_url(database: str) -> str:
    """The SQLAlchemy URL of `database` on the test server."""
    return make_url(POSTGRES_URL).set(database=database).render_as_string(hide_password=False)


def _admin(sql: str) -> None:
    """Run `sql` (CREATE or DROP DATABASE) on the maintenance database, outside a transaction."""
    dsn = make_url(POSTGRES_URL).set(drivername="postgresql")
    with psycopg.connect(dsn.render_as_string(hide_password=False), autocommit=True) as conn:
        conn.execute(sql)


def _drop(name: str) -> None:
    _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def fresh_database(engine: str, folder: Path) -> Iterator[str]:
    """The URL of a new, empty database of `engine` (SQLite: a file in `folder`), dropped
    afterwards."""
    if engine == "sqlite":
        yield f"sqlite:///{folder / 'perfdash.db'}"
        return
    name = f"perfdash_test_{uuid.uuid4().hex[:12]}"
    _admin(f'CREATE DATABASE "{name}"')
    try:
        yield postgres_url(name)
    finally:
        get_engine().dispose()
        _drop(name)


class MigratedTemplates:
    """Databases migrated to head once per session, copied for each test by `clone`."""

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self._templates: dict[str, str] = {}

    def _template(self, engine: str) -> str:
        if engine not in self._templates:
            if engine == "sqlite":
                path = self._folder / "template.db"
                upgrade_database(f"sqlite:///{path}")
                self._templates[engine] = str(path)
            else:
                name = f"perfdash_template_{uuid.uuid4().hex[:12]}"
                _admin(f'CREATE DATABASE "{name}"')
                self._templates[engine] = name  # so `close` drops it even if migrating fails
                upgrade_database(postgres_url(name))
        return self._templates[engine]

    @contextlib.contextmanager
    def clone(self, engine: str, folder: Path) -> Iterator[str]:
        """Like `fresh_database`, but the new database is already at the head migration."""
        template = self._template(engine)
        if engine == "sqlite":
            target = folder / "perfdash.db"
            with (
                contextlib.closing(sqlite3.connect(template)) as source,
                contextlib.closing(sqlite3.connect(target)) as copy,
            ):
                source.backup(copy)
            yield f"sqlite:///{target}"
            return
        name = f"perfdash_test_{uuid.uuid4().hex[:12]}"
        _admin(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        try:
            yield postgres_url(name)
        finally:
            get_engine().dispose()
            _drop(name)

    def close(self) -> None:
        """Drop the PostgreSQL template, if one was made."""
        if "postgresql" in self._templates:
            _drop(self._templates.pop("postgresql"))
