"""metrics, SLAs, tokens, webhooks (owner: metrics/SLA, issue 8)

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision: str = '0005'
down_revision: str | None = '0004'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_BigId = sa.BigInteger().with_variant(sa.Integer(), 'sqlite')
_Str = sqlmodel.sql.sqltypes.AutoString
_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table('metric_runs',
    sa.Column('id', _BigId, autoincrement=True, nullable=False),
    sa.Column('idempotency_key', _Str(length=64), nullable=False),
    sa.Column('project', _Str(length=128), nullable=False),
    sa.Column('benchmark', _Str(length=256), nullable=False),
    sa.Column('commit', _Str(length=64), nullable=False),
    sa.Column('branch', _Str(length=256), nullable=False),
    sa.Column('run_id', _Str(length=256), nullable=False),
    sa.Column('url', _Str(length=1024), nullable=False),
    sa.Column('trace_id', _Str(length=64), nullable=True),
    sa.Column('timestamp', _TS, nullable=False),
    sa.Column('environment', sa.JSON(), nullable=False),
    sa.Column('created_at', _TS, nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('idempotency_key'),
    )
    op.create_index('ix_metric_runs_series', 'metric_runs', ['project', 'benchmark', 'timestamp'])
    op.create_index('ix_metric_runs_branch', 'metric_runs', ['branch'])

    op.create_table('metric_points',
    sa.Column('id', _BigId, autoincrement=True, nullable=False),
    sa.Column('run_id', _BigId, nullable=False),
    sa.Column('metric', _Str(length=128), nullable=False),
    sa.Column('unit', _Str(length=32), nullable=False),
    sa.Column('direction', _Str(length=16), nullable=False),
    sa.Column('value', sa.Float(), nullable=True),
    sa.Column('hash', _Str(length=128), nullable=True),
    sa.Column('samples', sa.JSON(), nullable=True),
    sa.Column('n', sa.Integer(), nullable=False),
    *[sa.Column(c, sa.Float(), nullable=True)
      for c in ('mean', 'stddev', 'min', 'max', 'p05', 'p50', 'p95', 'p99')],
    sa.ForeignKeyConstraint(['run_id'], ['metric_runs.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('run_id', 'metric', name='uq_metric_points_run_metric'),
    )
    op.create_index('ix_metric_points_metric', 'metric_points', ['metric'])

    op.create_table('api_tokens',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('name', _Str(length=128), nullable=False),
    sa.Column('prefix', _Str(length=16), nullable=False),
    sa.Column('token_hash', _Str(length=64), nullable=False),
    sa.Column('scopes', sa.JSON(), nullable=False),
    sa.Column('created_at', _TS, nullable=False),
    sa.Column('last_used_at', _TS, nullable=True),
    sa.Column('revoked_at', _TS, nullable=True),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('token_hash'),
    )

    op.create_table('slas',
    sa.Column('id', _Str(length=32), nullable=False),
    sa.Column('name', _Str(length=128), nullable=False),
    sa.Column('project', _Str(length=128), nullable=False),
    sa.Column('benchmark', _Str(length=256), nullable=False),
    sa.Column('metric', _Str(length=128), nullable=False),
    sa.Column('environment', sa.JSON(), nullable=True),
    sa.Column('branch', _Str(length=256), nullable=True),
    sa.Column('statistic', _Str(length=8), nullable=False),
    sa.Column('window', sa.Integer(), nullable=False),
    sa.Column('rule', _Str(length=16), nullable=False),
    sa.Column('op', _Str(length=2), nullable=False),
    sa.Column('threshold', sa.Float(), nullable=True),
    sa.Column('tolerance_pct', sa.Float(), nullable=False),
    sa.Column('baseline_branch', _Str(length=256), nullable=False),
    sa.Column('baseline_runs', sa.Integer(), nullable=False),
    sa.Column('severity', _Str(length=16), nullable=False),
    sa.Column('description', _Str(length=1024), nullable=False),
    sa.Column('status', _Str(length=16), nullable=True),
    sa.Column('status_changed_at', _TS, nullable=True),
    sa.Column('last_observed', sa.Float(), nullable=True),
    sa.Column('last_threshold', sa.Float(), nullable=True),
    sa.Column('last_evaluated_at', _TS, nullable=True),
    sa.Column('sparkline', sa.JSON(), nullable=False),
    sa.Column('created_at', _TS, nullable=False),
    sa.Column('updated_at', _TS, nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('name'),
    )
    op.create_index('ix_slas_project', 'slas', ['project'])

    op.create_table('sla_evaluations',
    sa.Column('id', _BigId, autoincrement=True, nullable=False),
    sa.Column('sla_id', _Str(length=32), nullable=False),
    sa.Column('run_id', _BigId, nullable=True),
    sa.Column('commit', _Str(length=64), nullable=False),
    sa.Column('verdict', _Str(length=16), nullable=False),
    sa.Column('observed', sa.Float(), nullable=True),
    sa.Column('threshold', sa.Float(), nullable=True),
    sa.Column('baseline', sa.Float(), nullable=True),
    sa.Column('details', sa.JSON(), nullable=False),
    sa.Column('created_at', _TS, nullable=False),
    sa.ForeignKeyConstraint(['sla_id'], ['slas.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['run_id'], ['metric_runs.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    )
    op.create_index('ix_sla_evaluations_sla_created', 'sla_evaluations', ['sla_id', 'created_at'])
    op.create_index('ix_sla_evaluations_run_id', 'sla_evaluations', ['run_id'])

    op.create_table('webhooks',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('name', _Str(length=128), nullable=False),
    sa.Column('url', _Str(length=1024), nullable=False),
    sa.Column('kind', _Str(length=8), nullable=False),
    sa.Column('project', _Str(length=128), nullable=True),
    sa.Column('active', sa.Boolean(), nullable=False),
    sa.Column('secret', _Str(length=256), nullable=False),
    sa.Column('created_at', _TS, nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('name'),
    )

    op.create_table('webhook_deliveries',
    sa.Column('id', _BigId, autoincrement=True, nullable=False),
    sa.Column('webhook_id', sa.Integer(), nullable=False),
    sa.Column('event', _Str(length=32), nullable=False),
    sa.Column('payload', sa.JSON(), nullable=False),
    sa.Column('status', _Str(length=16), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('response_code', sa.Integer(), nullable=True),
    sa.Column('error', _Str(), nullable=True),
    sa.Column('created_at', _TS, nullable=False),
    sa.Column('delivered_at', _TS, nullable=True),
    sa.ForeignKeyConstraint(['webhook_id'], ['webhooks.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    )
    op.create_index('ix_webhook_deliveries_webhook_id', 'webhook_deliveries', ['webhook_id'])


def downgrade() -> None:
    op.drop_table('webhook_deliveries')
    op.drop_table('webhooks')
    op.drop_table('sla_evaluations')
    op.drop_table('slas')
    op.drop_table('api_tokens')
    op.drop_table('metric_points')
    op.drop_table('metric_runs')
