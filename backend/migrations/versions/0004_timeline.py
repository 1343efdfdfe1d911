"""timeline level-of-detail tables (owner: timeline, issue 7)

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30

No index is added on `events`: the raw-event path of the timeline reads the existing
(trace_id, kind, start_ns) index with a bounded look-back (events longer than that are
in timeline_spans), so a lane+start index would only slow every bulk insert.
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision: str = '0004'
down_revision: str | None = '0003'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _trace_id() -> sa.Column:
    return sa.Column(
        'trace_id', sqlmodel.sql.sqltypes.AutoString(length=32),
        sa.ForeignKey('traces.id', ondelete='CASCADE'), nullable=False,
    )


def upgrade() -> None:
    op.create_table('timeline_lanes',
    _trace_id(),
    sa.Column('lane', sa.Integer(), nullable=False),
    sa.Column('family', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('label', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('rank', sa.Integer(), nullable=True),
    sa.Column('device', sa.Integer(), nullable=True),
    sa.Column('stream', sa.BigInteger(), nullable=True),
    sa.Column('pid', sa.BigInteger(), nullable=True),
    sa.Column('tid', sa.BigInteger(), nullable=True),
    sa.Column('hidden', sa.Boolean(), nullable=False),
    sa.Column('events', sa.Integer(), nullable=False),
    sa.Column('busy_ns', sa.BigInteger(), nullable=False),
    sa.Column('first_ns', sa.BigInteger(), nullable=False),
    sa.Column('last_ns', sa.BigInteger(), nullable=False),
    sa.Column('level_blocks', sa.JSON(), nullable=False),
    sa.PrimaryKeyConstraint('trace_id', 'lane')
    )
    op.create_table('timeline_blocks',
    _trace_id(),
    sa.Column('level', sa.SmallInteger(), nullable=False),
    sa.Column('dclass', sa.SmallInteger(), nullable=False),
    sa.Column('start_ns', sa.BigInteger(), nullable=False),
    sa.Column('lane', sa.Integer(), nullable=False),
    sa.Column('end_ns', sa.BigInteger(), nullable=False),
    sa.Column('events', sa.Integer(), nullable=False),
    sa.Column('children', sa.Integer(), nullable=False),
    sa.Column('busy_ns', sa.BigInteger(), nullable=False),
    sa.Column('top_name', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.PrimaryKeyConstraint('trace_id', 'level', 'dclass', 'start_ns', 'lane')
    )
    op.create_table('timeline_spans',
    _trace_id(),
    sa.Column('dclass', sa.SmallInteger(), nullable=False),
    sa.Column('start_ns', sa.BigInteger(), nullable=False),
    sa.Column('event_id', sa.BigInteger(), nullable=False),
    sa.Column('lane', sa.Integer(), nullable=False),
    sa.Column('end_ns', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('trace_id', 'dclass', 'start_ns', 'event_id')
    )
    op.create_table('timeline_gaps',
    _trace_id(),
    sa.Column('lane', sa.Integer(), nullable=False),
    sa.Column('start_ns', sa.BigInteger(), nullable=False),
    sa.Column('dur_ns', sa.BigInteger(), nullable=False),
    sa.Column('cause', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('next_event_id', sa.BigInteger(), nullable=True),
    sa.Column('launch_event_id', sa.BigInteger(), nullable=True),
    sa.Column('cpu_runtime_ns', sa.BigInteger(), nullable=False),
    sa.Column('cpu_sync_ns', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('trace_id', 'lane', 'start_ns')
    )
    op.create_index('ix_timeline_gaps_trace_dur', 'timeline_gaps', ['trace_id', 'dur_ns'])
    op.create_table('timeline_names',
    _trace_id(),
    sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('count', sa.Integer(), nullable=False),
    sa.Column('total_ns', sa.BigInteger(), nullable=False),
    sa.Column('first_ns', sa.BigInteger(), nullable=False),
    sa.Column('last_ns', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('trace_id', 'kind', 'name')
    )


def downgrade() -> None:
    op.drop_table('timeline_names')
    op.drop_index('ix_timeline_gaps_trace_dur', table_name='timeline_gaps')
    op.drop_table('timeline_gaps')
    op.drop_table('timeline_spans')
    op.drop_table('timeline_blocks')
    op.drop_table('timeline_lanes')
