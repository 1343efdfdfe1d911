"""trace views: kernel percentiles and launch args, and kernel stats per group

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision: str = '0003'
down_revision: str | None = '0002'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_KERNEL_COLUMNS = (
    ('p50_ns', sa.BigInteger()),
    ('p95_ns', sa.BigInteger()),
    ('category', sa.String(length=16)),
    ('grid', sa.JSON()),
    ('block', sa.JSON()),
    ('registers_per_thread', sa.Integer()),
    ('shared_memory_bytes', sa.BigInteger()),
    ('occupancy_pct', sa.Float()),
)


def upgrade() -> None:
    with op.batch_alter_table('kernel_stats', schema=None) as batch_op:
        for name, type_ in _KERNEL_COLUMNS:
            batch_op.add_column(sa.Column(name, type_, nullable=True))
    op.create_table('kernel_group_stats',
    sa.Column('trace_id', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('group_by', sa.String(length=16), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('key', sa.Text(), nullable=False),
    sa.Column('device', sa.Integer(), nullable=True),
    sa.Column('stream', sa.BigInteger(), nullable=True),
    sa.Column('rank', sa.Integer(), nullable=True),
    sa.Column('kernels', sa.Integer(), nullable=False),
    sa.Column('top_kernel', sa.Text(), nullable=False),
    sa.Column('count', sa.Integer(), nullable=False),
    sa.Column('total_ns', sa.BigInteger(), nullable=False),
    sa.Column('mean_ns', sa.BigInteger(), nullable=False),
    sa.Column('min_ns', sa.BigInteger(), nullable=False),
    sa.Column('max_ns', sa.BigInteger(), nullable=False),
    sa.Column('p50_ns', sa.BigInteger(), nullable=False),
    sa.Column('p95_ns', sa.BigInteger(), nullable=False),
    sa.Column('pct', sa.Float(), nullable=False),
    sa.ForeignKeyConstraint(['trace_id'], ['traces.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('trace_id', 'group_by', 'position')
    )


def downgrade() -> None:
    op.drop_table('kernel_group_stats')
    with op.batch_alter_table('kernel_stats', schema=None) as batch_op:
        for name, _ in reversed(_KERNEL_COLUMNS):
            batch_op.drop_column(name)
