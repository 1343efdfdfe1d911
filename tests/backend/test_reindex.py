"""Upgrading a database from before the columnar store (issue 17), on SQLite and PostgreSQL.

A legacy trace is made the way the old code left it: its upload in the blob store, a
`ready` row and its events as rows of the `events` table, no dataset. `perfdash db upgrade`
must re-ingest it from the kept upload at revision 0014 and only then drop `events`
(0015); 0015 alone refuses while such a trace remains. The re-ingested events are checked
against the parser's own output and the kernel sums torch.profiler wrote itself.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest
import sqlalchemy as sa
import uvicorn
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Engine
from sqlmodel import SQLModel

from backend.core.clock import utc_now
from backend.core.config import Settings, get_settings
from backend.core.db import get_engine
from backend.core.migrate import alembic_config, current_revision, upgrade_database
from backend.core.queue import get_producer
from backend.services.loading.batches import event_batches
from backend.services.traces.blob_store import blob_path, put_blob
from ingest import Event, parse_file
from tests.conftest import DATA, ENGINES
from tests.databases import fresh_database
from tests.factories import Ingest, stored_events
from workers.cli import serve
from workers.cli.db import prepare_database
from workers.cli.main import main

TRAIN_STEP = DATA / "torch" / "h200_train_step.pt.trace.json.gz"
KERNEL_SUMS = DATA / "torch" / "h200_train_step.kernel_sums.json"
COMPILED = DATA / "torch" / "h200_compiled_steps.pt.trace.json.gz"
# The newest migration, read from the scripts (each issue adds one).
HEAD = ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()


def _clear_caches() -> None:
    for cached in (get_settings, get_engine, get_producer):
        cached.cache_clear()


@pytest.fixture(params=ENGINES)
def old_database(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Settings]:
    """Settings on a new database of each engine that is still at revision 0013."""
    with fresh_database(request.param, tmp_path) as url:
        monkeypatch.setenv("PERFDASH_DATA_DIR", str(tmp_path / "var"))
        monkeypatch.setenv("PERFDASH_DATABASE_URL", url)
        monkeypatch.setenv("PERFDASH_BROKER_URL", "")
        _clear_caches()
        upgrade_database(url, "0013")
        try:
            yield get_settings()
        finally:
            get_engine().dispose()
            _clear_caches()


def _legacy_trace(settings: Settings, path: Path, name: str) -> str:
    """A trace as the pre-columnar code stored it: the upload kept in the blob store, a
    `ready` row naming no dataset, and its events in the `events` table."""
    engine = get_engine()
    with path.open("rb") as stream:
        blob = put_blob(settings.blob_dir, stream, max_bytes=settings.max_upload_bytes)
    trace_id = uuid.uuid4().hex
    with parse_file(path) as parsed:
        rows = pa.Table.from_batches(event_batches(parsed.items)).to_pylist()
    counts: dict[str, int] = defaultdict(int)
    for event in rows:
        counts[event["kind"]] += 1
    meta = sa.MetaData()
    traces = sa.Table("traces", meta, autoload_with=engine)
    events = sa.Table("events", meta, autoload_with=engine)
    now = utc_now()
    trace: dict[str, Any] = {"id": trace_id, "name": name, "project": "default"}
    trace.update(status="ready", format="torch_profiler", parser_version="2", schema_version=1)
    trace.update(blob_sha256=blob.sha256, size_bytes=blob.size_bytes, ingest_attempts=1)
    trace.update(event_counts=dict(counts), devices=[], trace_metadata={}, warnings=[])
    trace.update(skipped_events=0, start_ns=rows[0]["start_ns"], duration_ns=1)
    trace.update(created_at=now, updated_at=now)
    legacy = []
    for event in rows:  # the old table numbered rows itself, and held args as JSON values
        stored = dict(event, trace_id=trace_id)
        del stored["id"]
        stored["args"] = orjson.loads(stored["args"]) if stored["args"] is not None else None
        legacy.append(stored)
    assert set(legacy[0]) <= {c.name for c in events.columns}
    with engine.begin() as conn:
        conn.execute(traces.insert().values(**trace))
        conn.execute(events.insert(), legacy)
    return trace_id


def _parsed(path: Path) -> list[dict[str, Any]]:
    """The events as the parser yields them, numbered from 1 in its order."""
    with parse_file(path) as parsed:
        return [_as_stored(i, e) for i, e in enumerate(parsed.events, 1)]


def _as_stored(event_id: int, e: Event) -> dict[str, Any]:
    """One parsed event in the shape `stored_events` reads (args through JSON)."""
    row: dict[str, Any] = {"id": event_id, "kind": e.kind.value, "name": e.name}
    row.update(start_ns=e.start_ns, dur_ns=e.dur_ns, rank=e.rank, device=e.device)
    row.update(stream=e.stream, pid=e.pid, tid=e.tid, correlation=e.correlation)
    row["args"] = orjson.loads(orjson.dumps(e.args)) if e.args else None
    return row


def _kernel_sums(rows: list[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    sums: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in rows:
        if row["kind"] == "kernel":
            sums[row["name"]][0] += 1
            sums[row["name"]][1] += row["dur_ns"]
    return {name: (count, total) for name, (count, total) in sums.items()}


def _tables(engine: Engine) -> set[str]:
    engine.dispose()
    return set(sa.inspect(engine).get_table_names())


def _trace(engine: Engine, trace_id: str) -> dict[str, Any]:
    with engine.connect() as conn:
        sql = sa.text("SELECT status, error, dataset FROM traces WHERE id = :t")
        return dict(conn.execute(sql, {"t": trace_id}).mappings().one())


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_upgrade_reindexes_a_legacy_trace_and_then_drops_events(
    old_database: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    trace_id = _legacy_trace(old_database, TRAIN_STEP, "legacy step")
    engine = get_engine()

    code, out = _cli(capsys, "db", "upgrade")

    assert code == 0, out
    expected = _parsed(TRAIN_STEP)
    lines = out.splitlines()
    assert "reindex: 1 trace(s) to re-ingest from their kept uploads" in lines
    assert f"[1/1] legacy step ({trace_id}): re-ingesting" in lines
    done = next(line for line in lines if line.startswith("[1/1] legacy step") and "ready" in line)
    assert f"ready, {len(expected):,} events in " in done and done.endswith(" s")
    assert "reindex: 1 re-ingested, 0 failed, 0 skipped in" in out
    assert lines[-1] == "database is at the latest revision"

    assert current_revision() == HEAD
    assert "events" not in _tables(engine)
    assert _trace(engine, trace_id)["dataset"] is not None
    stored = stored_events(engine, trace_id)
    assert stored == expected
    # torch.profiler's own per-kernel sums (key_averages), not perfdash's
    torch_sums = orjson.loads(KERNEL_SUMS.read_bytes())["kernels"]
    assert _kernel_sums(stored) == {k["name"]: (k["count"], k["total_ns"]) for k in torch_sums}


def test_serve_upgrades_an_old_database_before_it_listens(
    old_database: Settings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The embedded default: `perfdash serve` on an install from before the columnar store."""
    trace_id = _legacy_trace(old_database, TRAIN_STEP, "legacy")
    seen: list[str | None] = []
    monkeypatch.setattr(uvicorn, "run", lambda *_a, **_k: seen.append(current_revision()))
    monkeypatch.setattr(serve, "build_app", lambda *_a: None)

    assert main(["serve", "--no-worker", "--no-samples"]) == 0

    assert seen == [HEAD], "at head before it listens"
    assert f"[1/1] legacy ({trace_id}): ready" in capsys.readouterr().out
    assert stored_events(get_engine(), trace_id) == _parsed(TRAIN_STEP)


def test_0015_refuses_while_a_legacy_trace_keeps_its_events(old_database: Settings) -> None:
    url = old_database.resolved_database_url
    trace_id = _legacy_trace(old_database, TRAIN_STEP, "legacy")
    engine = get_engine()

    with pytest.raises(Exception, match=r"perfdash db reindex") as refused:
        command.upgrade(alembic_config(url), "head")  # a bare upgrade, from 0013
    assert f"'legacy' ({trace_id})" in str(refused.value)
    assert "revision 0014" in str(refused.value)
    # PostgreSQL rolls 0014 back with the refusal (DDL in the transaction); SQLite keeps it.
    revision = current_revision()
    assert revision == ("0013" if engine.dialect.name == "postgresql" else "0014")
    columns = {c["name"] for c in sa.inspect(engine).get_columns("traces")}
    assert ("dataset" in columns) == (revision == "0014")
    assert "events" in _tables(engine)
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM events")).scalar_one() > 0

    assert main(["db", "reindex"]) == 0
    command.upgrade(alembic_config(url), "head")
    assert current_revision() == HEAD
    assert "events" not in _tables(engine)


def test_a_missing_upload_fails_its_trace_and_the_rest_go_on(
    old_database: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    upgrade_database(old_database.resolved_database_url, "0014")
    lost = _legacy_trace(old_database, COMPILED, "lost")
    kept = _legacy_trace(old_database, TRAIN_STEP, "kept")
    engine = get_engine()
    with engine.connect() as conn:
        sha = conn.execute(sa.text("SELECT blob_sha256 FROM traces WHERE id = :t"), {"t": lost})
        blob_path(old_database.blob_dir, sha.scalar_one()).unlink()

    code, out = _cli(capsys, "db", "reindex")

    assert code == 1, out
    message = "the uploaded bytes (sha256 "
    assert f"[1/2] lost ({lost}): FAILED (failed, " in out
    assert message in out and "are missing from the blob store" in out
    assert f"[2/2] kept ({kept}): ready, {len(_parsed(TRAIN_STEP)):,} events" in out
    assert "reindex: 1 re-ingested, 1 failed, 0 skipped in" in out
    failed = _trace(engine, lost)
    assert failed["status"] == "failed" and failed["dataset"] is None
    assert failed["error"].startswith(message) and "missing from the blob store" in failed["error"]
    assert _trace(engine, kept)["status"] == "ready"

    # A failed trace does not hold the upgrade back: nothing ready lacks a dataset.
    code, out = _cli(capsys, "db", "upgrade")
    assert code == 0 and "reindex: no trace needs re-ingesting" in out
    assert current_revision() == HEAD and "events" not in _tables(engine)


@pytest.mark.parametrize("engine_name", ENGINES)
def test_a_new_database_goes_to_head_with_nothing_to_reindex(
    engine_name: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with fresh_database(engine_name, tmp_path) as url:
        monkeypatch.setenv("PERFDASH_DATA_DIR", str(tmp_path / "var"))
        monkeypatch.setenv("PERFDASH_DATABASE_URL", url)
        _clear_caches()
        try:
            assert prepare_database() == 0
            assert current_revision() == HEAD
            assert capsys.readouterr().out == ""
        finally:
            get_engine().dispose()
            _clear_caches()


def test_reindex_picks_older_parser_versions_and_all_with_the_flag(
    engine: Engine, ingest: Ingest, capsys: pytest.CaptureFixture[str]
) -> None:
    current = ingest(TRAIN_STEP, "current")
    older = ingest(COMPILED, "older")
    events = {t: stored_events(engine, t) for t in (current, older)}
    datasets = {t: _trace(engine, t)["dataset"] for t in (current, older)}
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE traces SET parser_version = '1' WHERE id = :t"), {"t": older})

    code, out = _cli(capsys, "db", "reindex")
    assert code == 0
    assert f"[1/1] older ({older}): ready, {len(events[older]):,} events" in out
    assert "current" not in out
    assert _trace(engine, older)["dataset"] != datasets[older]
    assert _trace(engine, current)["dataset"] == datasets[current]

    code, out = _cli(capsys, "db", "reindex")
    assert (code, out.strip()) == (0, "reindex: no trace needs re-ingesting")

    code, out = _cli(capsys, "db", "reindex", "--all")
    assert code == 0 and "reindex: 2 re-ingested, 0 failed, 0 skipped" in out
    assert _trace(engine, current)["dataset"] != datasets[current]
    assert {t: stored_events(engine, t) for t in (current, older)} == events


def test_0015_downgrades_to_an_empty_events_table_and_the_models_match_head(
    settings: Settings, engine: Engine
) -> None:
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        assert compare_metadata(context, SQLModel.metadata) == []
    config = alembic_config(settings.resolved_database_url)
    command.downgrade(config, "0014")
    assert "events" in _tables(engine)
    inspector = sa.inspect(engine)
    assert {c["name"] for c in inspector.get_columns("events")} == {
        "id", "trace_id", "kind", "name", "start_ns", "dur_ns", "rank", "device", "stream",
        "pid", "tid", "correlation", "args",
    }  # fmt: skip
    assert [i["name"] for i in inspector.get_indexes("events")] == ["ix_events_trace_kind_start"]
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM events")).scalar_one() == 0
    command.upgrade(config, "head")
    assert "events" not in _tables(engine)
