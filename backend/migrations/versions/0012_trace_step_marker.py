"""traces.step_marker: the step marker a user chose for a trace (owner: steps, issue 20)

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision: str = '0012'
down_revision: str | None = '0011'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('traces') as batch:
        batch.add_column(
            sa.Column('step_marker', sqlmodel.sql.sqltypes.AutoString(length=512), nullable=True)
        )


def downgrade() -> None:
    with op.batch_alter_table('traces') as batch:
        batch.drop_column('step_marker')
