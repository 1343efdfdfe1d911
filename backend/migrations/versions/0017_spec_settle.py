"""benchmark_specs.settle: wait for an idle, cool GPU and steady clocks before timing (issue 22)

NULL means off, which is what every spec stored before this revision does.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-02
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = '0017'
down_revision: str | None = '0016'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('benchmark_specs') as batch:
        batch.add_column(sa.Column('settle', sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('benchmark_specs') as batch:
        batch.drop_column('settle')
