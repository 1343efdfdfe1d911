"""reliability and auth: traces.ingest_attempts and ingest_claimed_until (owner: reliability/security, issue 10)

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-30
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = '0008'
down_revision: str | None = '0007'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("traces") as batch:
        batch.add_column(
            sa.Column("ingest_attempts", sa.Integer(), nullable=False, server_default="0")
        )
        batch.add_column(sa.Column("ingest_claimed_until", sa.DateTime(timezone=True)))


def downgrade() -> None:
    with op.batch_alter_table("traces") as batch:
        batch.drop_column("ingest_claimed_until")
        batch.drop_column("ingest_attempts")
