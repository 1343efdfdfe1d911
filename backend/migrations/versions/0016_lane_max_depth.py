"""timeline_lanes.max_depth: a lane's deepest event nesting, for stable track heights (issue 19)

Lanes indexed before this revision keep 0 until their trace is re-indexed
(`perfdash db reindex`).

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-02
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = '0016'
down_revision: str | None = '0015'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('timeline_lanes') as batch:
        batch.add_column(
            sa.Column('max_depth', sa.Integer(), server_default='0', nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table('timeline_lanes') as batch:
        batch.drop_column('max_depth')
