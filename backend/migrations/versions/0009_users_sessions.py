"""dashboard users and login sessions (owner: auth, issue 10)

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision: str = '0009'
down_revision: str | None = '0008'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_Str = sqlmodel.sql.sqltypes.AutoString
_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table('users',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('username', _Str(length=128), nullable=False),
    sa.Column('password_hash', _Str(length=256), nullable=True),
    sa.Column('role', sa.String(length=16), nullable=False),
    sa.Column('created_at', _TS, nullable=False),
    sa.Column('disabled', sa.Boolean(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('username'),
    )
    op.create_table('sessions',
    sa.Column('id_hash', _Str(length=64), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('csrf_token', _Str(length=64), nullable=False),
    sa.Column('created_at', _TS, nullable=False),
    sa.Column('expires_at', _TS, nullable=False),
    sa.Column('last_seen_at', _TS, nullable=False),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id_hash'),
    )
    op.create_index('ix_sessions_user_id', 'sessions', ['user_id'])
    op.create_index('ix_sessions_expires_at', 'sessions', ['expires_at'])


def downgrade() -> None:
    op.drop_index('ix_sessions_expires_at', table_name='sessions')
    op.drop_index('ix_sessions_user_id', table_name='sessions')
    op.drop_table('sessions')
    op.drop_table('users')
