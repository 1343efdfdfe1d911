"""Migration 0020 (tags, note, event_total and the list's indexes) on SQLite and PostgreSQL:
it matches the models, fills `event_total` for traces loaded before it, and goes back down;
a fresh ingest stores `event_total` as the sum of the counts the API reports."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine
from sqlmodel import SQLModel

from backend.core.config import Settings
from backend.core.migrate import alembic_config
from tests.factories import upload_and_ingest


def _columns(engine: Engine) -> set[str]:
    return {c["name"] for c in sa.inspect(engine).get_columns("traces")}


def test_0020_matches_the_models_backfills_event_total_and_downgrades(
    settings: Settings, engine: Engine
) -> None:
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        assert compare_metadata(context, SQLModel.metadata) == []
    config = alembic_config(settings.resolved_database_url)
    command.downgrade(config, "0020-1")  # the revision before 0020
    assert not {"tags", "note", "event_total"} & _columns(engine)
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO traces (id, name, project, status, blob_sha256, size_bytes, "
                "event_counts, devices, trace_metadata, skipped_events, warnings, "
                "ingest_attempts, created_at, updated_at) VALUES ('t1', 'old', 'p', 'ready', "
                "'ab', 1, :counts, '[]', '{}', 0, '[]', 0, :now, :now)"
            ),
            {"counts": '{"kernel": 40, "cpu_op": 2}', "now": "2026-01-01 00:00:00"},
        )
    command.upgrade(config, "head")
    with engine.connect() as conn:
        row = conn.execute(sa.text("SELECT event_total, tags, note FROM traces")).one()
    assert (row[0], row[2]) == (42, None) and row[1] in ("[]", [])


def test_ingest_stores_event_total_as_the_sum_of_the_counts(
    client: TestClient, engine: Engine, settings: Settings, h200_trace: Path
) -> None:
    trace_id = upload_and_ingest(client, engine, settings, h200_trace)
    counts = client.get(f"/api/v1/traces/{trace_id}").json()["event_counts"]
    with engine.connect() as conn:
        total = conn.execute(sa.text("SELECT event_total FROM traces")).scalar_one()
    assert total == sum(counts.values()) > 0
