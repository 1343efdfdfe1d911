"""Shared fixtures: a fresh database per test on SQLite and on the local PostgreSQL.

PostgreSQL is real (127.0.0.1:5432, trust auth, maintenance database `test`, or
PERFDASH_TEST_POSTGRES_URL). Each test gets its own database, created and dropped by
`tests/databases.py`, so runs never see each other's rows.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from backend.core.config import Settings, get_settings
from backend.core.db import get_engine
from backend.core.migrate import upgrade_database
from backend.core.queue import get_producer
from backend.main import create_app
from tests.databases import MigratedTemplates, fresh_database
from tests.factories import Ingest, upload_and_ingest

__all__ = ["fresh_database"]  # imported from here by module-scoped database fixtures

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
# A git worktree sits elsewhere: PERFDASH_TEST_CORPUS points it at the corpus.
CORPUS = Path(os.environ.get("PERFDASH_TEST_CORPUS", REPO.parent / "shared" / "corpus"))


# Every database test runs on each engine; a module-scoped fixture may take these too.
ENGINES = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


@pytest.fixture(scope="session")
def migrated_templates(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MigratedTemplates]:
    templates = MigratedTemplates(tmp_path_factory.mktemp("templates"))
    yield templates
    templates.close()


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


@contextlib.contextmanager
def app_with_traces(
    folder: Path, paths: dict[str, Path]
) -> Iterator[tuple[TestClient, Settings, dict[str, str]]]:
    """For module-scoped API tests: a migrated SQLite database, uploads up to 64 MiB, the app
    over it, and each of `paths` that exists uploaded and ingested (name -> trace id)."""
    with (
        pytest.MonkeyPatch.context() as mp,
        fresh_database("sqlite", folder) as url,
        settings_on(url, folder, mp) as settings,
    ):
        mp.setenv("PERFDASH_MAX_UPLOAD_BYTES", str(64 * 1024 * 1024))
        get_settings.cache_clear()
        with TestClient(create_app()) as client:
            traces = {
                name: upload_and_ingest(client, get_engine(), settings, path)
                for name, path in paths.items()
                if path.exists()
            }
            yield client, settings, traces


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


@pytest.fixture
def ingest(client: TestClient, engine: Engine, settings: Settings) -> Ingest:
    """Upload a file (or bytes) under a name, ingest it in-process; the ready trace's id."""

    def run(source: Path | bytes, name: str | None = None) -> str:
        return upload_and_ingest(client, engine, settings, source, name)

    return run


@pytest.fixture
def server(settings: Settings) -> Iterator[str]:
    """The API on a real uvicorn in a thread, on the test's database."""
    config = uvicorn.Config(create_app(), host="127.0.0.1", port=0, log_level="warning")
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    while not srv.started:
        time.sleep(0.05)
    port = srv.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(timeout=10)
