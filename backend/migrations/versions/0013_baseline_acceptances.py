"""baseline acceptances: who accepted an SLA's new baseline, when and why (issue 20)

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision: str = '0013'
down_revision: str | None = '0012'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_Str = sqlmodel.sql.sqltypes.AutoString
_BigId = sa.BigInteger().with_variant(sa.Integer(), 'sqlite')


def upgrade() -> None:
    op.create_table('baseline_acceptances',
    sa.Column('id', _BigId, autoincrement=True, nullable=False),
    sa.Column('sla_id', _Str(length=32), nullable=False),
    sa.Column('run_id', _BigId, nullable=False),
    sa.Column('commit', _Str(length=64), nullable=False),
    sa.Column('accepted_by', _Str(length=256), nullable=False),
    sa.Column('reason', _Str(length=1024), nullable=False),
    sa.Column('accepted_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['sla_id'], ['slas.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['run_id'], ['metric_runs.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    )
    op.create_index('ix_baseline_acceptances_sla_id', 'baseline_acceptances', ['sla_id'])


def downgrade() -> None:
    op.drop_index('ix_baseline_acceptances_sla_id', table_name='baseline_acceptances')
    op.drop_table('baseline_acceptances')
