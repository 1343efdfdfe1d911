"""outbox: task messages written with the state change they announce (issue 25, item 6)

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision: str = '0011'
down_revision: str | None = '0010'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_Str = sqlmodel.sql.sqltypes.AutoString
_TS = sa.DateTime(timezone=True)
_BigId = sa.BigInteger().with_variant(sa.Integer(), 'sqlite')


def upgrade() -> None:
    op.create_table('outbox',
    sa.Column('id', _BigId, autoincrement=True, nullable=False),
    sa.Column('task', _Str(length=64), nullable=False),
    sa.Column('args', sa.JSON(), nullable=False),
    sa.Column('queue', _Str(length=64), nullable=False),
    sa.Column('options', sa.JSON(), nullable=False),
    sa.Column('not_before', _TS, nullable=True),
    sa.Column('next_attempt_at', _TS, nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('last_error', sa.Text(), nullable=True),
    sa.Column('created_at', _TS, nullable=False),
    sa.PrimaryKeyConstraint('id'),
    )
    op.create_index('ix_outbox_next_attempt_at', 'outbox', ['next_attempt_at'])


def downgrade() -> None:
    op.drop_index('ix_outbox_next_attempt_at', table_name='outbox')
    op.drop_table('outbox')
