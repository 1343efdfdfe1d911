"""benchmark refs: the spec's allowed branches and env, who approved a ref (issue 40)

`allowed_branches` empty means the spec's `branch`, and `env` empty adds nothing, which
is what every spec stored before this revision gets. `ref_approved_by` is NULL for the
runs and bisects whose refs the runner checks (all of them, before this revision).

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-04
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision: str = '0022'
down_revision: str | None = '0021'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_Str = sqlmodel.sql.sqltypes.AutoString


def upgrade() -> None:
    with op.batch_alter_table('benchmark_specs') as batch:
        batch.add_column(
            sa.Column('allowed_branches', sa.JSON(), server_default='[]', nullable=False)
        )
        batch.add_column(sa.Column('env', sa.JSON(), server_default='{}', nullable=False))
    for table in ('benchmark_runs', 'bisects'):
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column('ref_approved_by', _Str(length=256), nullable=True))


def downgrade() -> None:
    for table in ('bisects', 'benchmark_runs'):
        with op.batch_alter_table(table) as batch:
            batch.drop_column('ref_approved_by')
    with op.batch_alter_table('benchmark_specs') as batch:
        batch.drop_column('env')
        batch.drop_column('allowed_branches')
