"""The communication kernels of an events part, kept at ingest for `collectives`.

Pairing kernels into collective instances crosses ranks, so it is done at read time over
every part's rows (`collectives.collective_instances`); what is kept here is each rank's
communication kernels (by name, `ingest.classify.is_communication_name`, or by a
`Collective name` arg), with the args only where they describe the collective: a few
thousand rows per rank, against a scan of every kernel of the job per request.

Public surface: `comm_kernel_table`, `COMM_KERNEL_SCHEMA`.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from backend.services.analysis.stored import counts, read_events_file, rows_table
from ingest.classify import is_communication_name

COMM_KERNEL_SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int32()),
        pa.field("device", pa.int32()),
        pa.field("name", pa.string(), nullable=False),
        *counts("start_ns", "dur_ns", "id"),  # id: the tie break of the start order
        pa.field("args", pa.string()),
    ]
)
_NAMES = "SELECT DISTINCT name FROM {events} WHERE kind = 'kernel'"
_SQL = (
    "SELECT rank, device, name, start_ns, dur_ns, id, "
    "CASE WHEN args LIKE '%\"Collective name\"%' THEN args END "
    "FROM {events} WHERE kind = 'kernel' "
    "AND (name IN (SELECT unnest(?)) OR args LIKE '%\"Collective name\"%') "
    "ORDER BY start_ns, id"
)


def comm_kernel_table(events: Path) -> pa.Table:
    """The part's communication kernels (`COMM_KERNEL_SCHEMA`), by start."""
    names = [n for (n,) in read_events_file(events, _NAMES) if is_communication_name(n)]
    return rows_table(read_events_file(events, _SQL, [names]), COMM_KERNEL_SCHEMA)
