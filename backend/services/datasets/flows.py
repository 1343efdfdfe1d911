"""The source's own flow events as the dataset's `flows.parquet` rows, each bound to its event.

Why a file of its own: `events.parquet` keeps one schema for every format, and flows are
few (a Kineto trace has one `fwdbwd` pair per autograd op with a backward) and read only
by the export, so they stay out of the events' row groups. Each point is bound here, once,
to the stored event Perfetto's JSON importer would bind it to (v1 flows: an `s` or `t`,
or an `f` with `bp: "e"`, to the innermost slice around its `ts` on its thread; any
other `f` to the next slice to start there), so a reader needs no interval join. ASOF
joins find nearly every binding (a Kineto flow point is its op's start); only a point
whose latest-starting event has already ended goes through the interval join: a plain
interval join for all took 1.0-1.9 s for the 12k points of a 186k-event trace.

Public surface: `flow_table`.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa

from backend.services.datasets.layout import FLOW_SCHEMA
from ingest.events import Flows

_UNBOUND = pa.schema([f for f in FLOW_SCHEMA if f.name != "event_id"])
# The events on the flows' tracks; of those starting together, the shortest (the innermost,
# the ties in id order) stands for them in the ASOF joins.
_BIND = """
WITH f AS (SELECT row_number() OVER () AS row, *, coalesce(rank, -1) AS r FROM flows_in),
ev AS (
    SELECT * FROM (
        SELECT id, coalesce(rank, -1) AS r, start_ns, dur_ns,
            CASE WHEN device IS NOT NULL THEN device ELSE pid END AS p,
            CASE WHEN device IS NOT NULL THEN stream ELSE tid END AS t
        FROM read_parquet($events) WHERE kind <> 'memory'
    ) WHERE (r, p, t) IN (SELECT r, pid, tid FROM f)
), starts AS (
    SELECT r, p, t, start_ns, arg_min(id, {'dur': dur_ns, 'id': id}) AS id,
        min(dur_ns) AS dur_ns
    FROM ev GROUP BY r, p, t, start_ns
), latest AS (  -- the last event to start at or before the point, if it is still open
    SELECT f.row, s.id FROM f ASOF JOIN starts s
        ON f.r = s.r AND f.pid = s.p AND f.tid = s.t AND f.ts_ns >= s.start_ns
    WHERE (f.phase <> 'f' OR f.enclosing) AND f.ts_ns <= s.start_ns + s.dur_ns
), rest AS MATERIALIZED (  -- otherwise (it had ended: the point is in its parent) ...
    SELECT * FROM f WHERE (phase <> 'f' OR enclosing) AND row NOT IN (SELECT row FROM latest)
), around AS (  -- ... the interval join, for those points only
    SELECT rest.row, ev.id FROM rest JOIN ev ON ev.r = rest.r AND ev.p = rest.pid
        AND ev.t = rest.tid AND ev.start_ns <= rest.ts_ns
        AND rest.ts_ns <= ev.start_ns + ev.dur_ns
    QUALIFY row_number() OVER (PARTITION BY rest.row
        ORDER BY ev.start_ns DESC, ev.dur_ns, ev.id) = 1
), following AS (
    SELECT f.row, s.id FROM f ASOF JOIN starts s
        ON f.r = s.r AND f.pid = s.p AND f.tid = s.t AND f.ts_ns <= s.start_ns
    WHERE f.phase = 'f' AND NOT f.enclosing
)
SELECT flow_id, cat, name, phase, ts_ns, rank, pid, tid, enclosing,
    coalesce(latest.id, around.id, following.id) AS event_id
FROM f LEFT JOIN latest USING (row) LEFT JOIN around USING (row)
    LEFT JOIN following USING (row)
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
