"""traces.dataset: the name of the trace's columnar dataset in the blob store (issue 17)

Readers open only the dataset a trace row names; a trace ingested before the columnar
store has none until `perfdash db reindex` re-ingests it from its kept blob.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-02
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision: str = '0014'
down_revision: str | None = '0013'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('traces') as batch:
        batch.add_column(
            sa.Column('dataset', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True)
        )


def downgrade() -> None:
    with op.batch_alter_table('traces') as batch:
        batch.drop_column('dataset')
