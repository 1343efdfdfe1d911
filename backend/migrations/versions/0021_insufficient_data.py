"""SLA verdict `insufficient_data` (issue 37): verdict and status columns take 32 characters

A regression or relative rule with no tolerance and no noise band yet answers
`insufficient_data` (17 characters) instead of judging at 0 %; `String(16)` held the four
verdicts before it. Downgrade turns those verdicts into `no_data`, the nearest older one.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-04
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = '0021'
down_revision: str | None = '0020'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_COLUMNS = (('slas', 'status', True), ('sla_evaluations', 'verdict', False))


def upgrade() -> None:
    for table, column, nullable in _COLUMNS:
        with op.batch_alter_table(table) as batch:
            batch.alter_column(
                column, existing_type=sa.String(16), type_=sa.String(32), existing_nullable=nullable
            )


def downgrade() -> None:
    for table, column, nullable in _COLUMNS:
        op.execute(
            f"UPDATE {table} SET {column} = 'no_data' WHERE {column} = 'insufficient_data'"
        )
        with op.batch_alter_table(table) as batch:
            batch.alter_column(
                column, existing_type=sa.String(32), type_=sa.String(16), existing_nullable=nullable
            )
