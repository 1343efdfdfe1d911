"""noise bands and stable runs (issue 22): SLA `require_stable`, nullable `tolerance_pct`,
the reason the latest run was skipped; spec `aa_repeats`, run `aa_group`

`tolerance_pct` becomes nullable (None: use the noise band's minimum detectable change);
SLAs stored before this revision keep their explicit value (0 by default).

Revision ID: 0018
Revises: 0016
Create Date: 2026-12-02
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision: str = '0018'
down_revision: str | None = '0017'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_Str = sqlmodel.sql.sqltypes.AutoString


def upgrade() -> None:
    with op.batch_alter_table('slas') as batch:
        batch.alter_column('tolerance_pct', existing_type=sa.Float(), nullable=True)
        batch.add_column(
            sa.Column('require_stable', sa.Boolean(), server_default=sa.false(), nullable=False)
        )
        batch.add_column(sa.Column('last_skip_reason', _Str(length=512), nullable=True))
    with op.batch_alter_table('benchmark_specs') as batch:
        batch.add_column(
            sa.Column('aa_repeats', sa.Integer(), server_default='1', nullable=False)
        )
    with op.batch_alter_table('benchmark_runs') as batch:
        batch.add_column(sa.Column('aa_group', _Str(length=32), server_default='', nullable=False))


def downgrade() -> None:
    with op.batch_alter_table('benchmark_runs') as batch:
        batch.drop_column('aa_group')
    with op.batch_alter_table('benchmark_specs') as batch:
        batch.drop_column('aa_repeats')
    op.execute('UPDATE slas SET tolerance_pct = 0 WHERE tolerance_pct IS NULL')
    with op.batch_alter_table('slas') as batch:
        batch.drop_column('last_skip_reason')
        batch.drop_column('require_stable')
        batch.alter_column('tolerance_pct', existing_type=sa.Float(), nullable=False)
