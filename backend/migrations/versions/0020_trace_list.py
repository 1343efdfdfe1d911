"""traces: tags, note and event_total, and indexes for the paged, sorted list (issue 24)

`event_total` (the sum of `event_counts`) lets the list sort by events in SQL; it is
filled here for traces loaded before this revision.

Revision ID: 0020
Revises: 0017
Create Date: 2026-12-02
"""
import json
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = '0020'
down_revision: str | None = '0019'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The list sorts by each of these (status and project were indexed already).
_INDEXES = ('created_at', 'name', 'size_bytes', 'event_total', 'format')


def upgrade() -> None:
    with op.batch_alter_table('traces') as batch:
        batch.add_column(sa.Column('tags', sa.JSON(), server_default='[]', nullable=False))
        batch.add_column(sa.Column('note', sa.Text(), nullable=True))
        batch.add_column(
            sa.Column('event_total', sa.BigInteger(), server_default='0', nullable=False)
        )
    conn = op.get_bind()
    traces = sa.table('traces', sa.column('id'), sa.column('event_counts'), sa.column('event_total'))
    for trace_id, counts in conn.execute(sa.select(traces.c.id, traces.c.event_counts)):
        counts = json.loads(counts) if isinstance(counts, str) else counts
        total = sum(int(n) for n in (counts or {}).values())
        if total:
            conn.execute(
                traces.update().where(traces.c.id == trace_id).values(event_total=total)
            )
    for column in _INDEXES:
        op.create_index(f'ix_traces_{column}', 'traces', [column])


def downgrade() -> None:
    for column in _INDEXES:
        op.drop_index(f'ix_traces_{column}', table_name='traces')
    with op.batch_alter_table('traces') as batch:
        batch.drop_column('event_total')
        batch.drop_column('note')
        batch.drop_column('tags')
