"""ingest v2: event rank, trace summary and progress

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision: str = '0002'
down_revision: str | None = '0001'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column('events', sa.Column('rank', sa.Integer(), nullable=True))
    op.add_column('traces', sa.Column('summary', sa.JSON(), nullable=True))
    op.add_column('traces', sa.Column('progress', sa.JSON(), nullable=True))


def downgrade() -> None:
    op.drop_column('traces', 'progress')
    op.drop_column('traces', 'summary')
    op.drop_column('events', 'rank')
