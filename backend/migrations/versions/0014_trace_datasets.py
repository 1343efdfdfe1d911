"""traces.dataset: the name of the trace's columnar dataset in the blob store (issue 17)

Readers open only the dataset a trace row names; a trace ingested before the columnar
store has none until `perfdash db reindex` re-ingests it from its kept blob. The timeline
pyramid and gaps move into the dataset too, so their tables go (the re-ingest rebuilds
them); downgrade recreates them empty.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-02
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision: str = '0014'
down_revision: str | None = '0013'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('traces') as batch:
        batch.add_column(
            sa.Column('dataset', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True)
        )
    op.drop_index('ix_timeline_gaps_trace_dur', table_name='timeline_gaps')
    op.drop_table('timeline_gaps')
    op.drop_table('timeline_blocks')


def downgrade() -> None:
    op.create_table(
        'timeline_blocks',
        sa.Column('trace_id', sa.String(), nullable=False),
        sa.Column('level', sa.SmallInteger(), nullable=False),
        sa.Column('dclass', sa.SmallInteger(), nullable=False),
        sa.Column('start_ns', sa.BigInteger(), nullable=False),
        sa.Column('lane', sa.Integer(), nullable=False),
        sa.Column('end_ns', sa.BigInteger(), nullable=False),
        sa.Column('events', sa.Integer(), nullable=False),
        sa.Column('children', sa.Integer(), nullable=False),
        sa.Column('busy_ns', sa.BigInteger(), nullable=False),
        sa.Column('top_name', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.ForeignKeyConstraint(['trace_id'], ['traces.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('trace_id', 'level', 'dclass', 'start_ns', 'lane'),
    )
    op.create_table(
        'timeline_gaps',
        sa.Column('trace_id', sa.String(), nullable=False),
        sa.Column('lane', sa.Integer(), nullable=False),
        sa.Column('start_ns', sa.BigInteger(), nullable=False),
        sa.Column('dur_ns', sa.BigInteger(), nullable=False),
        sa.Column('cause', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column('next_event_id', sa.BigInteger(), nullable=True),
        sa.Column('launch_event_id', sa.BigInteger(), nullable=True),
        sa.Column('cpu_runtime_ns', sa.BigInteger(), nullable=False),
        sa.Column('cpu_sync_ns', sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(['trace_id'], ['traces.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('trace_id', 'lane', 'start_ns'),
    )
    op.create_index('ix_timeline_gaps_trace_dur', 'timeline_gaps', ['trace_id', 'dur_ns'])
    with op.batch_alter_table('traces') as batch:
        batch.drop_column('dataset')
