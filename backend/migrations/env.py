"""Alembic environment: the metadata of `backend.models`, on the URL given by perfdash."""

from alembic import context
from sqlmodel import SQLModel

import backend.models  # noqa: F401  (registers the tables on SQLModel.metadata)
from backend.core.db import make_engine

config = context.config
url = config.attributes["url"]
engine = make_engine(url)

with engine.connect() as connection:
    context.configure(
        connection=connection,
        target_metadata=SQLModel.metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()
engine.dispose()
