"""initial schema

Revision ID: 0001
Revises: 
Create Date: 2026-11-29
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision: str = '0001'
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('traces',
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(length=512), nullable=False),
    sa.Column('project', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
    sa.Column('id', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('error', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('format', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=True),
    sa.Column('blob_sha256', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('size_bytes', sa.BigInteger(), nullable=False),
    sa.Column('parser_version', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=True),
    sa.Column('schema_version', sa.Integer(), nullable=True),
    sa.Column('event_counts', sa.JSON(), nullable=False),
    sa.Column('devices', sa.JSON(), nullable=False),
    sa.Column('trace_metadata', sa.JSON(), nullable=False),
    sa.Column('skipped_events', sa.Integer(), nullable=False),
    sa.Column('warnings', sa.JSON(), nullable=False),
    sa.Column('start_ns', sa.BigInteger(), nullable=True),
    sa.Column('duration_ns', sa.BigInteger(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('blob_sha256')
    )
    with op.batch_alter_table('traces', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_traces_project'), ['project'], unique=False)
        batch_op.create_index(batch_op.f('ix_traces_status'), ['status'], unique=False)

    op.create_table('events',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('trace_id', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('start_ns', sa.BigInteger(), nullable=False),
    sa.Column('dur_ns', sa.BigInteger(), nullable=False),
    sa.Column('device', sa.Integer(), nullable=True),
    sa.Column('stream', sa.BigInteger(), nullable=True),
    sa.Column('pid', sa.BigInteger(), nullable=True),
    sa.Column('tid', sa.BigInteger(), nullable=True),
    sa.Column('correlation', sa.BigInteger(), nullable=True),
    sa.Column('args', sa.JSON(), nullable=True),
    sa.ForeignKeyConstraint(['trace_id'], ['traces.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('events', schema=None) as batch_op:
        batch_op.create_index('ix_events_trace_kind_start', ['trace_id', 'kind', 'start_ns'], unique=False)

    op.create_table('kernel_stats',
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('count', sa.Integer(), nullable=False),
    sa.Column('total_ns', sa.BigInteger(), nullable=False),
    sa.Column('mean_ns', sa.BigInteger(), nullable=False),
    sa.Column('min_ns', sa.BigInteger(), nullable=False),
    sa.Column('max_ns', sa.BigInteger(), nullable=False),
    sa.Column('pct', sa.Float(), nullable=False),
    sa.Column('trace_id', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('rank', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['trace_id'], ['traces.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('trace_id', 'rank')
    )


def downgrade() -> None:
    op.drop_table('kernel_stats')
    with op.batch_alter_table('events', schema=None) as batch_op:
        batch_op.drop_index('ix_events_trace_kind_start')

    op.drop_table('events')
    with op.batch_alter_table('traces', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_traces_status'))
        batch_op.drop_index(batch_op.f('ix_traces_project'))

    op.drop_table('traces')
