"""Shared fixtures: a fresh database per test on SQLite and on the local PostgreSQL.

PostgreSQL is real (127.0.0.1:5432, trust auth, maintenance database `test`, or
PERFDASH_TEST_POSTGRES_URL). Each test gets its own database, created and dropped here,
so runs never see each other's rows. The migrations run from an empty database once per
session and engine; each test's database is a copy of that one (`CREATE DATABASE ...
TEMPLATE`, SQLite's backup API), because migrating every test's own took 1-3 s each.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine, make_url

from backend.core.config import Settings, get_settings
from backend.core.db import get_engine
from backend.core.migrate import upgrade_database
from backend.core.queue import get_producer
from backend.main import create_app

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
# A git worktree sits elsewhere: PERFDASH_TEST_CORPUS points it at the corpus.
CORPUS = Path(os.environ.get("PERFDASH_TEST_CORPUS", REPO.parent / "shared" / "corpus"))
POSTGRES_URL = os.environ.get(
    "PERFDASH_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)


def _admin_dsn() -> str:
    url = make_url(POSTGRES_URL)
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


def _postgres_url(name: str) -> str:
    return make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)


# Every database test runs on each engine; a module-scoped fixture may take these too.
ENGINES = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


@contextlib.contextmanager
def fresh_database(engine: str, folder: Path) -> Iterator[str]:
    """The URL of a new, empty database of `engine` (SQLite: a file in `folder`), dropped
    afterwards."""
    if engine == "sqlite":
        yield f"sqlite:///{folder / 'perfdash.db'}"
        return
    name = f"perfdash_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(_admin_dsn(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield _postgres_url(name)
    finally:
        get_engine().dispose()
        with psycopg.connect(_admin_dsn(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@dataclass
class MigratedTemplates:
    """One database per engine, migrated to head from empty when first asked for, which
    `clone` copies for each test; the PostgreSQL one is dropped by `drop`."""

    folder: Path
    _made: dict[str, str] = field(default_factory=dict)

    def _template(self, engine: str) -> str:
        if engine in self._made:
            return self._made[engine]
        if engine == "sqlite":
            path = self.folder / "template.db"
            upgrade_database(f"sqlite:///{path}")
            self._made[engine] = str(path)
            return str(path)
        name = f"perfdash_template_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(_admin_dsn(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        self._made[engine] = name  # dropped by `drop` even if a migration fails
        upgrade_database(_postgres_url(name))
        return name

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
        with psycopg.connect(_admin_dsn(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        try:
            yield _postgres_url(name)
        finally:
            get_engine().dispose()
            with psycopg.connect(_admin_dsn(), autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def drop(self) -> None:
        name = self._made.pop("postgresql", None)
        if name is not None:
            with psycopg.connect(_admin_dsn(), autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def migrated_templates(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MigratedTemplates]:
    templates = MigratedTemplates(tmp_path_factory.mktemp("templates"))
    yield templates
    templates.drop()


@pytest.fixture(params=ENGINES)
def database_url(
    request: pytest.FixtureRequest, tmp_path: Path, migrated_templates: MigratedTemplates
) -> Iterator[str]:
    """A URL of a new database of each engine, already migrated to head."""
    with migrated_templates.clone(request.param, tmp_path) as url:
        yield url


def _clear_caches() -> None:
    for cached in (get_settings, get_engine, get_producer):
        cached.cache_clear()


@contextlib.contextmanager
def settings_on(
    database_url: str, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Settings]:
    """Settings pointing at the database (migrated), a blob store in `folder` and a
    filesystem broker."""
    monkeypatch.setenv("PERFDASH_DATA_DIR", str(folder / "var"))
    monkeypatch.setenv("PERFDASH_DATABASE_URL", database_url)
    monkeypatch.setenv("PERFDASH_BROKER_URL", "")
    monkeypatch.setenv("PERFDASH_MAX_UPLOAD_BYTES", str(8 * 1024 * 1024))
    _clear_caches()
    try:
        upgrade_database()
        yield get_settings()
    finally:
        get_engine().dispose()
        _clear_caches()


@pytest.fixture
def settings(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Settings]:
    """Settings pointing at the fresh database, a private blob store and a filesystem broker."""
    with settings_on(database_url, tmp_path, monkeypatch) as test_settings:
        yield test_settings


@pytest.fixture
def engine(settings: Settings) -> Engine:
    return get_engine()


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app()) as c:
        yield c


@pytest.fixture
def h200_trace() -> Path:
    """A real torch.profiler trace made on an H200 by tests/data/make_torch_trace.py."""
    return DATA / "torch" / "h200_train_step.pt.trace.json.gz"
