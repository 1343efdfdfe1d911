"""drop the `events` table: every trace's events are in its columnar dataset (issue 17)

Refuses while a `ready` trace still has events only in `events` (no dataset): dropping the
table would lose them. `perfdash db upgrade` re-ingests such traces from their kept blobs
at revision 0014 before it applies this one; `perfdash db reindex` does the same by hand.
A downgrade recreates the table empty (the datasets stay where they are).

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-02
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision: str = '0015'
down_revision: str | None = '0014'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_LEGACY = sa.text(
    "SELECT t.id, t.name FROM traces t WHERE t.status = 'ready' AND t.dataset IS NULL "
    "AND EXISTS (SELECT 1 FROM events e WHERE e.trace_id = t.id) ORDER BY t.created_at"
)
_SHOWN = 5


class LegacyTracesError(RuntimeError):
    """Ready traces whose events are still only in the `events` table."""


def upgrade() -> None:
    legacy = op.get_bind().execute(_LEGACY).all()
    if legacy:
        names = ", ".join(f"{name!r} ({trace_id})" for trace_id, name in legacy[:_SHOWN])
        more = f" and {len(legacy) - _SHOWN} more" if len(legacy) > _SHOWN else ""
        raise LegacyTracesError(
            f"{len(legacy)} ready trace(s) still keep their events only in the old `events` "
            f"table: {names}{more}. Run `perfdash db reindex` first (it works at revision "
            "0014 and re-ingests them from their kept uploads), then upgrade again; "
            "`perfdash db upgrade` does both."
        )
    op.drop_index('ix_events_trace_kind_start', table_name='events')
    op.drop_table('events')


def downgrade() -> None:
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
    sa.Column('rank', sa.Integer(), nullable=True),
    sa.ForeignKeyConstraint(['trace_id'], ['traces.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index('ix_events_trace_kind_start', 'events', ['trace_id', 'kind', 'start_ns'])
