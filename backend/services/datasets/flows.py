"""The source's own flow events as the dataset's `flows.parquet` rows, each bound to its event.

Why a file of its own: `events.parquet` keeps one schema for every format, and flows are
few (a Kineto trace has one `fwdbwd` pair per autograd op with a backward) and read only
by the export, so they stay out of the events' row groups. Each point is bound here, once,
to the stored event Perfetto's JSON importer would bind it to (v1 flows: an `s` or `t`,
or an `f` with `bp: "e"`, to the innermost slice around its `ts` on its thread; any
other `f` to the next slice to start there), so a reader needs no interval join.

Public surface: `flow_table`.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa

from backend.services.datasets.layout import FLOW_SCHEMA
from ingest.events import Flows

_UNBOUND = pa.schema([f for f in FLOW_SCHEMA if f.name != "event_id"])
_BIND = """
WITH f AS (SELECT row_number() OVER () AS row, * FROM flows_in),
ev AS (
    SELECT id, rank, CASE WHEN device IS NOT NULL THEN device ELSE pid END AS p,
        CASE WHEN device IS NOT NULL THEN stream ELSE tid END AS t, start_ns, dur_ns
    FROM read_parquet($events) WHERE kind <> 'memory'
), around AS (
    SELECT f.row, ev.id FROM f JOIN ev ON ev.rank IS NOT DISTINCT FROM f.rank
        AND ev.p = f.pid AND ev.t = f.tid
        AND ev.start_ns <= f.ts_ns AND f.ts_ns <= ev.start_ns + ev.dur_ns
    WHERE f.phase <> 'f' OR f.enclosing
    QUALIFY row_number() OVER (PARTITION BY f.row
        ORDER BY ev.start_ns DESC, ev.dur_ns, ev.id DESC) = 1
), following AS (
    SELECT f.row, ev.id FROM f JOIN ev ON ev.rank IS NOT DISTINCT FROM f.rank
        AND ev.p = f.pid AND ev.t = f.tid AND ev.start_ns >= f.ts_ns
    WHERE f.phase = 'f' AND NOT f.enclosing
    QUALIFY row_number() OVER (PARTITION BY f.row ORDER BY ev.start_ns, ev.id) = 1
)
SELECT flow_id, cat, name, phase, ts_ns, rank, pid, tid, enclosing,
    coalesce(around.id, following.id) AS event_id
FROM f LEFT JOIN around USING (row) LEFT JOIN following USING (row)
ORDER BY f.row
"""


def flow_table(flows: Flows, rank: int | None, events: Path) -> pa.Table:
    """`flows` as `FLOW_SCHEMA` rows, a point without a rank given `rank` (the trace's, for
    a single-rank file), bound to the events of the `events.parquet` at `events`."""
    ranks = [rank if r is None else r for r in flows.rank]
    columns = [
        flows.id, flows.cat, flows.name, flows.phase, flows.ts_ns, ranks, flows.pid,
        flows.tid, flows.enclosing,
    ]  # fmt: skip
    flows_in = pa.Table.from_arrays(
        [pa.array(c, type=f.type) for c, f in zip(columns, _UNBOUND, strict=True)],
        schema=_UNBOUND,
    )
    with duckdb.connect(":memory:", config={"threads": 2}) as conn:
        conn.register("flows_in", flows_in)
        bound = conn.sql(_BIND, params={"events": str(events)}).to_arrow_table()
    return bound.cast(FLOW_SCHEMA)
