"""Alembic environment: the metadata of `backend.models`, on the URL given by perfdash."""

from alembic import context
from sqlmodel import SQLModel

import backend.models  # noqa: F401  (registers the tables on SQLModel.metadata)
from backend.core.db import make_engine

config = context.config
url = config.attributes["url"]
engine = make_engine(url)

with engine.connect() as connection:
    sqlite = connection.dialect.name == "sqlite"
    if sqlite:
        # Batch mode changes a SQLite table by copying it and dropping the old one; with
        # foreign keys on, that DROP deletes the rows of every child table declared ON
        # DELETE CASCADE (an SLA's evaluations, a trace's lanes). The pragma only takes
        # effect outside a transaction, so it is set and committed before the migrations.
        connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
        connection.commit()
    context.configure(
        connection=connection,
        target_metadata=SQLModel.metadata,
        render_as_batch=sqlite,
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()
    if sqlite:
        dangling = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
        if dangling:
            raise RuntimeError(f"migration left rows whose parent is gone: {dangling[:5]}")
engine.dispose()
