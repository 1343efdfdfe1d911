"""bisects: confirm a regression on one runner and find its commit (issue 22)

Revision ID: 0019
Revises: 0016
Create Date: 2026-12-02
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision: str = '0019'
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_BigId = sa.BigInteger().with_variant(sa.Integer(), 'sqlite')
_Str = sqlmodel.sql.sqltypes.AutoString
_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table('bisects',
    sa.Column('id', _Str(length=32), nullable=False),
    sa.Column('spec_id', _BigId, nullable=False),
    sa.Column('label', _Str(length=256), nullable=False),
    sa.Column('metric', _Str(length=128), nullable=False),
    sa.Column('lower_is_better', sa.Boolean(), nullable=True),
    sa.Column('margin_pct', sa.Float(), nullable=False),
    sa.Column('good', _Str(length=256), nullable=False),
    sa.Column('bad', _Str(length=256), nullable=False),
    sa.Column('status', sa.String(length=24), nullable=False),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('commits', sa.JSON(), nullable=False),
    sa.Column('commits_source', _Str(length=16), nullable=False),
    sa.Column('runs', sa.JSON(), nullable=False),
    sa.Column('verdicts', sa.JSON(), nullable=False),
    sa.Column('repeats', sa.Integer(), nullable=False),
    sa.Column('probe_repeats', sa.Integer(), nullable=False),
    sa.Column('budget', sa.Integer(), nullable=False),
    sa.Column('runner', _Str(length=256), nullable=False),
    sa.Column('last_good', _Str(length=256), nullable=True),
    sa.Column('first_bad', _Str(length=256), nullable=True),
    sa.Column('trigger', _Str(length=16), nullable=False),
    sa.Column('sla_id', _Str(length=32), nullable=True),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('created_at', _TS, nullable=False),
    sa.Column('updated_at', _TS, nullable=False),
    sa.ForeignKeyConstraint(['spec_id'], ['benchmark_specs.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    )
    with op.batch_alter_table('bisects', schema=None) as batch_op:
        batch_op.create_index('ix_bisects_spec_id', ['spec_id'], unique=False)
        batch_op.create_index('ix_bisects_status', ['status'], unique=False)


def downgrade() -> None:
    op.drop_table('bisects')
