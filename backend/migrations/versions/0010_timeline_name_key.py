"""timeline_names keyed by a hash of the name (owner: parsers, issue 25 item 5)

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01

A kernel name over ~2.7 KB cannot sit in a PostgreSQL btree row, so the primary key
(trace_id, kind, name) failed the whole ingest with "index row size exceeds btree". The key
is now (trace_id, kind, name_key), name_key being `backend.models.timeline.name_key(name)`
(128-bit BLAKE2b, hex). The table is rebuilt, the same way on both engines, and the keys of
existing rows are computed here.
"""
from collections.abc import Sequence
from hashlib import blake2b

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision: str = '0010'
down_revision: str | None = '0009'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_Str = sqlmodel.sql.sqltypes.AutoString
_COLUMNS = ('trace_id', 'kind', 'name', 'count', 'total_ns', 'first_ns', 'last_ns')


def _key(name: str) -> str:
    return blake2b(name.encode('utf-8', 'surrogatepass'), digest_size=16).hexdigest()


def _create(table: str, *, hashed: bool) -> None:
    key = ('name_key',) if hashed else ('name',)
    op.create_table(table,
    sa.Column('trace_id', _Str(length=32), sa.ForeignKey('traces.id', ondelete='CASCADE'),
              nullable=False),
    sa.Column('kind', _Str(length=16), nullable=False),
    *([sa.Column('name_key', _Str(length=32), nullable=False)] if hashed else []),
    sa.Column('name', _Str(), nullable=False),
    sa.Column('count', sa.Integer(), nullable=False),
    sa.Column('total_ns', sa.BigInteger(), nullable=False),
    sa.Column('first_ns', sa.BigInteger(), nullable=False),
    sa.Column('last_ns', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('trace_id', 'kind', *key, name=f'{table}_pkey'),
    )


def _copy(*, hashed: bool) -> None:
    conn = op.get_bind()
    old = sa.table('timeline_names_old', *(sa.column(c) for c in _COLUMNS))
    new_columns = (*_COLUMNS, 'name_key') if hashed else _COLUMNS
    new = sa.table('timeline_names', *(sa.column(c) for c in new_columns))
    result = conn.execute(sa.select(old).execution_options(stream_results=True))
    for part in result.mappings().partitions(10_000):  # memory stays one batch
        rows = [dict(r) for r in part]
        if hashed:
            for row in rows:
                row['name_key'] = _key(row['name'])
        conn.execute(sa.insert(new), rows)


def _rebuild(*, hashed: bool) -> None:
    op.rename_table('timeline_names', 'timeline_names_old')
    if op.get_bind().dialect.name == 'postgresql':  # the old key keeps its name otherwise
        op.execute('ALTER TABLE timeline_names_old RENAME CONSTRAINT timeline_names_pkey '
                   'TO timeline_names_old_pkey')
    _create('timeline_names', hashed=hashed)
    _copy(hashed=hashed)
    op.drop_table('timeline_names_old')


def upgrade() -> None:
    _rebuild(hashed=True)


def downgrade() -> None:
    _rebuild(hashed=False)
