"""benchmark specs and runs (owner: benchmarks, issue 9)

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision: str = '0006'
down_revision: str | None = '0005'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_BigId = sa.BigInteger().with_variant(sa.Integer(), 'sqlite')
_Str = sqlmodel.sql.sqltypes.AutoString
_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table('benchmark_specs',
    sa.Column('id', _BigId, autoincrement=True, nullable=False),
    sa.Column('name', _Str(length=128), nullable=False),
    sa.Column('project', _Str(length=128), nullable=False),
    sa.Column('description', _Str(length=2000), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('workload', _Str(length=512), nullable=False),
    sa.Column('command', sa.JSON(), nullable=False),
    sa.Column('output_file', _Str(length=512), nullable=True),
    sa.Column('params', sa.JSON(), nullable=False),
    sa.Column('sweep', sa.JSON(), nullable=False),
    sa.Column('queue', _Str(length=64), nullable=False),
    sa.Column('seed', sa.Integer(), nullable=False),
    sa.Column('warmup', sa.Integer(), nullable=False),
    sa.Column('iters', sa.Integer(), nullable=False),
    sa.Column('profile', sa.Boolean(), nullable=False),
    sa.Column('deterministic', _Str(length=8), nullable=False),
    sa.Column('timeout_s', sa.Integer(), nullable=False),
    sa.Column('schedule', _Str(length=128), nullable=True),
    sa.Column('install', _Str(length=1024), nullable=True),
    sa.Column('branch', _Str(length=256), nullable=False),
    sa.Column('spec_hash', _Str(length=64), nullable=False),
    sa.Column('last_scheduled_at', _TS, nullable=True),
    sa.Column('created_at', _TS, nullable=False),
    sa.Column('updated_at', _TS, nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('name'),
    )
    op.create_table('benchmark_runs',
    sa.Column('id', _Str(length=32), nullable=False),
    sa.Column('spec_id', _BigId, nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('reason', _Str(length=32), nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('trigger', _Str(length=16), nullable=False),
    sa.Column('ref', _Str(length=256), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('runner', _Str(length=256), nullable=True),
    sa.Column('spec_hash', _Str(length=64), nullable=False),
    sa.Column('environment', sa.JSON(), nullable=False),
    sa.Column('warnings', sa.JSON(), nullable=False),
    sa.Column('determinism_hash', _Str(length=64), nullable=True),
    sa.Column('results', sa.JSON(), nullable=False),
    sa.Column('metric_run_ids', sa.JSON(), nullable=False),
    sa.Column('trace_id', _Str(length=32), nullable=True),
    sa.Column('created_at', _TS, nullable=False),
    sa.Column('started_at', _TS, nullable=True),
    sa.Column('finished_at', _TS, nullable=True),
    sa.ForeignKeyConstraint(['spec_id'], ['benchmark_specs.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    )
    with op.batch_alter_table('benchmark_runs', schema=None) as batch_op:
        batch_op.create_index('ix_benchmark_runs_spec_id', ['spec_id'], unique=False)
        batch_op.create_index('ix_benchmark_runs_status', ['status'], unique=False)
    op.create_table('runners',
    sa.Column('name', _Str(length=256), nullable=False),
    sa.Column('hostname', _Str(length=256), nullable=False),
    sa.Column('queues', sa.JSON(), nullable=False),
    sa.Column('capabilities', sa.JSON(), nullable=False),
    sa.Column('online', sa.Boolean(), nullable=False),
    sa.Column('started_at', _TS, nullable=False),
    sa.Column('last_seen_at', _TS, nullable=False),
    sa.PrimaryKeyConstraint('name'),
    )


def downgrade() -> None:
    op.drop_table('runners')
    with op.batch_alter_table('benchmark_runs', schema=None) as batch_op:
        batch_op.drop_index('ix_benchmark_runs_status')
        batch_op.drop_index('ix_benchmark_runs_spec_id')
    op.drop_table('benchmark_runs')
    op.drop_table('benchmark_specs')
