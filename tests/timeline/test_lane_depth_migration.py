"""Migration 0016 (`timeline_lanes.max_depth`) on SQLite and PostgreSQL: it matches the
model, downgrades and upgrades with lanes in the table, and old lanes read as depth 0."""

from __future__ import annotations

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect, text
from sqlalchemy.engine import Engine
from sqlmodel import SQLModel

from backend.core.config import Settings
from backend.core.migrate import alembic_config
from tests.factories import Ingest
from tests.timeline.conftest import H200_SMALL


def _depths(engine: Engine, trace_id: str) -> list[int]:
    with engine.connect() as conn:
        query = text("SELECT max_depth FROM timeline_lanes WHERE trace_id = :t ORDER BY lane")
        return list(conn.execute(query, {"t": trace_id}).scalars())


def test_0016_matches_the_model_and_old_lanes_read_as_zero(
    settings: Settings, engine: Engine, ingest: Ingest
) -> None:
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        diff = compare_metadata(context, SQLModel.metadata)
    assert [d for d in diff if "timeline_lanes" in str(d)] == []
    trace_id = ingest(H200_SMALL)
    depths = _depths(engine, trace_id)
    assert max(depths) >= 4
    config = alembic_config(settings.resolved_database_url)
    command.downgrade(config, "0015")
    engine.dispose()
    columns = {c["name"] for c in inspect(engine).get_columns("timeline_lanes")}
    assert "max_depth" not in columns and "level_blocks" in columns
    command.upgrade(config, "head")
    engine.dispose()
    assert _depths(engine, trace_id) == [0] * len(depths), "lanes kept, at the server default"
