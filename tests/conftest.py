"""Shared fixtures: a fresh database per test on SQLite and on the local PostgreSQL.

PostgreSQL is real (127.0.0.1:5432, trust auth, maintenance database `test`, or
PERFDASH_TEST_POSTGRES_URL). Each test gets its own database, created and dropped here,
so runs never see each other's rows.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
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
CORPUS = REPO.parent / "shared" / "corpus"
POSTGRES_URL = os.environ.get(
    "PERFDASH_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)


def _admin_dsn() -> str:
    url = make_url(POSTGRES_URL)
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A URL of an empty database of each engine."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'perfdash.db'}"
        return
    name = f"perfdash_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(_admin_dsn(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        get_engine().dispose()
        with psycopg.connect(_admin_dsn(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _clear_caches() -> None:
    for cached in (get_settings, get_engine, get_producer):
        cached.cache_clear()


@pytest.fixture
def settings(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Settings]:
    """Settings pointing at the fresh database, a private blob store and a filesystem broker."""
    monkeypatch.setenv("PERFDASH_DATA_DIR", str(tmp_path / "var"))
    monkeypatch.setenv("PERFDASH_DATABASE_URL", database_url)
    monkeypatch.setenv("PERFDASH_BROKER_URL", "")
    monkeypatch.setenv("PERFDASH_MAX_UPLOAD_BYTES", str(8 * 1024 * 1024))
    _clear_caches()
    upgrade_database()
    yield get_settings()
    get_engine().dispose()
    _clear_caches()


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
