"""The blob sweeper, on both databases: partial uploads and blobs no trace names go once
old, and nothing a trace needs (or a live upload writes) is ever removed.

Ages are made with `os.utime` and the sweep's `now`, never by waiting. Tests that never
reach the database use `store` (a blob store, and an engine with no tables) on one engine.
"""

from __future__ import annotations

import io
import os
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError
from sqlmodel import Session

from backend.core.config import Settings
from backend.core.db import get_engine
from backend.services.errors import InvalidInputError
from backend.services.traces.blob_store import TEMP_PREFIX, blob_path, put_blob, remove_orphan
from backend.services.traces.blob_sweep import sweep_blobs

TRACE = b'{"traceEvents": []}'


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def _later(settings: Settings) -> float:
    """A sweep's `now` just past the threshold for files written now."""
    return time.time() + settings.orphan_blob_after_s + 5


@pytest.fixture
def store(tmp_path: Path) -> tuple[Settings, Engine]:
    """A blob store, and an engine any query on which would fail (it has no tables)."""
    return Settings(data_dir=tmp_path / "var"), create_engine("sqlite://")


def test_partial_upload_files_go_only_once_old(store: tuple[Settings, Engine]) -> None:
    settings, engine = store
    root = settings.blob_dir
    root.mkdir(parents=True)
    dead, live = root / f"{TEMP_PREFIX}dead", root / f"{TEMP_PREFIX}live"
    dead.write_bytes(b"half an upload")
    live.write_bytes(b"still arriving")
    _age(dead, settings.orphan_blob_after_s + 5)
    others = [root / "README", root / "ab"]  # not the store's: never touched
    for other in others:
        other.write_bytes(b"x")
        _age(other, 10 * settings.orphan_blob_after_s)

    result = sweep_blobs(engine=engine, settings=settings)

    assert result.partial == [dead.name] and result.orphans == []
    assert not dead.exists() and live.exists() and all(p.exists() for p in others)


def test_a_blob_no_trace_names_goes_once_old_and_a_traces_blob_stays(
    client: TestClient, settings: Settings
) -> None:
    root = settings.blob_dir
    kept = client.post("/api/v1/traces", files={"file": ("t.json", TRACE)}).json()["id"]
    kept_sha = client.get(f"/api/v1/traces/{kept}").json()["blob_sha256"]
    orphan = put_blob(root, io.BytesIO(b'{"traceEvents": [1]}'), max_bytes=1 << 20)

    assert sweep_blobs(engine=get_engine(), settings=settings).orphans == []  # both are new
    result = sweep_blobs(engine=get_engine(), settings=settings, now=_later(settings))

    assert result.orphans == [orphan.sha256]
    assert not orphan.path.exists() and blob_path(root, kept_sha).exists()
    assert [p.name for p in root.iterdir() if p.is_file()] == []  # nothing left set aside


def test_a_blob_whose_row_never_committed_is_swept(
    client: TestClient, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database fails between the blob and the commit (as an API killed there would):
    the blob is left, then the sweeper removes it."""

    def down(_: Session) -> None:
        raise OperationalError("INSERT", {}, Exception("server closed the connection"))

    monkeypatch.setattr(Session, "commit", down)
    response = client.post("/api/v1/traces", files={"file": ("t.json", TRACE)})
    monkeypatch.undo()
    assert response.status_code == 503
    [left] = [p for p in settings.blob_dir.rglob("*") if p.is_file()]

    result = sweep_blobs(engine=get_engine(), settings=settings, now=_later(settings))

    assert result.orphans == [left.name] and not left.exists()
    assert client.get("/api/v1/traces").json()["count"] == 0


def test_remove_orphan_keeps_a_blob_named_or_rewritten_meanwhile(
    store: tuple[Settings, Engine],
) -> None:
    """The second look, with the blob set aside: a row committed meanwhile, or the same bytes
    uploaded again (a fresh file), keep it in place."""
    root = store[0].blob_dir
    blob = put_blob(root, io.BytesIO(b"bytes"), max_bytes=1 << 20)
    cutoff = time.time() + 60  # the blob is older than this

    assert not remove_orphan(root, blob.sha256, wanted=lambda _: True, written_after=cutoff)
    assert blob.path.read_bytes() == b"bytes"
    assert not remove_orphan(root, blob.sha256, wanted=lambda _: False, written_after=0.0)
    assert blob.path.exists()

    def upload_lands(sha: str) -> bool:
        put_blob(root, io.BytesIO(b"bytes"), max_bytes=1 << 20)  # same bytes, new file
        return False

    assert remove_orphan(root, blob.sha256, wanted=upload_lands, written_after=cutoff)
    assert blob.path.read_bytes() == b"bytes"  # only the old copy went


def test_a_blob_set_aside_by_a_killed_sweeper_is_put_back(store: tuple[Settings, Engine]) -> None:
    settings, engine = store
    root = settings.blob_dir
    blob = put_blob(root, io.BytesIO(b"bytes"), max_bytes=1 << 20)

    def killed(_: str) -> bool:
        raise OperationalError("SELECT", {}, Exception("database went away"))

    with pytest.raises(OperationalError):
        remove_orphan(root, blob.sha256, wanted=killed, written_after=time.time() + 60)
    assert blob.path.exists()  # an error puts it back at once
    os.replace(blob.path, root / f".orphan-{blob.sha256}")  # as a SIGKILL would leave it

    sweep_blobs(engine=engine, settings=settings)

    assert blob.path.read_bytes() == b"bytes"


def test_an_upload_stalled_past_the_sweep_is_refused_not_a_500(
    store: tuple[Settings, Engine],
) -> None:
    settings, engine = store
    root = settings.blob_dir

    class Stalls(io.BytesIO):
        """Sends a chunk, then stalls past the threshold (the sweep runs meanwhile)."""

        def read(self, size: int | None = -1) -> bytes:
            chunk = super().read(size)
            if chunk:
                sweep_blobs(engine=engine, settings=settings, now=_later(settings))
            return chunk

    with pytest.raises(InvalidInputError, match="stalled"):
        put_blob(root, Stalls(b"x" * 10), max_bytes=1 << 20)
    assert [p for p in root.rglob("*") if p.is_file()] == []
