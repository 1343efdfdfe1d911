"""Timeline level-of-detail index, built inside the ingest transaction (owner: timeline, #7).

From what `TimelineCollector` gathered while the events streamed into the trace's dataset,
writes the lane table, the long events and the name table used by search in SQL, and the
busy-block pyramid of every lane and the GPU idle gaps with their causes into the dataset
(`blocks.parquet`, `gaps.parquet`: 95% of the index's bytes, which as SQL rows cost about
90 B per event). Everything is replaced on re-ingest, so the index always matches the events.

Public surface: `write_timeline_index`.
"""

import heapq
from collections.abc import Iterable, Iterator
from itertools import chain
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import delete, insert, inspect
from sqlalchemy.engine import Connection
from sqlmodel import SQLModel

from backend.core.bulk_insert import bulk_insert
from backend.models.timeline import (
    TimelineLane,
    TimelineName,
    TimelineSpan,
    name_key,
    table_of,
)
from backend.services.datasets import DatasetWriter, query_file
from backend.services.timeline import lanes as lanes_mod
from backend.services.timeline.collect import Collected, Lane, Row
from backend.services.timeline.depth import MaxDepth
from backend.services.timeline.gaps import Coverage, find_gaps
from backend.services.timeline.lanes import DEVICE, GPU, LaneKey
from backend.services.timeline.pyramid import (
    first_level,
    length_class,
    level_count,
    pyramid,
)

_TABLES: tuple[type[SQLModel], ...] = (TimelineSpan, TimelineName, TimelineLane)
_NO_MIX = (0, 0, 0, 0)  # the mix columns of a lane coloured by family, not by category


def write_timeline_index(
    conn: Connection, trace_id: str, scan: Collected, dataset: DatasetWriter
) -> None:
    """Replace the trace's index with one built from `scan` (which this consumes): lanes,
    long events and names in SQL, the pyramid's blocks and the gaps in the new dataset.

    Args:
        conn: the ingest transaction's connection (the index commits with the trace row).
        trace_id: the trace whose events were just stored.
        scan: what `TimelineCollector` gathered from those events.
        dataset: the trace's new dataset, its events closed, not yet committed (the trace
            row names it only once this transaction commits).
    """
    for table in _TABLES:
        conn.execute(delete(table_of(table)).where(table_of(table).c.trace_id == trace_id))
    if not scan.lanes:
        dataset.write_blocks(())
        dataset.write_gaps(())
        return
    keys = sorted(scan.lanes, key=lanes_mod.sort_key)
    devices = _device_lanes(scan.lanes)
    lane_ids = {key: i for i, key in enumerate([*keys, *devices])}
    lanes = scan.lanes.values()
    span = max(lane.last_end for lane in lanes) - min(lane.first_start for lane in lanes)
    levels = level_count(span)
    first_kernels = [scan.first_kernel[k] for k in keys if k in scan.first_kernel]
    queues = _queues(dataset.events_path, first_kernels)
    multi_rank = len({k.rank for k in keys if k.rank is not None}) > 1
    runtime = {t: Coverage(iv) for t, iv in scan.runtime.items()}
    sync = {t: Coverage(iv) for t, iv in scan.sync.items()}
    lane_rows: list[dict[str, Any]] = []

    def parts_of(key: LaneKey) -> list[Lane]:
        return devices[key] if key in devices else [scan.lanes[key]]

    def block_rows() -> Iterator[tuple[Any, ...]]:
        """Every lane's blocks, streamed: a lane's rows come sorted from its columns and
        its pyramid is written as it is built, so no lane is ever held whole. The lane's
        deepest nesting is measured on the way (`MaxDepth`), in the same pass."""
        for key, lane in lane_ids.items():
            parts = parts_of(key)
            # A device lane only feeds the overview, which never reads level 1.
            lowest = 2 if key.family == DEVICE and levels > 1 else 1
            mixed = key.family in (GPU, DEVICE)  # other lanes are coloured by family
            tally = [0] * levels
            busy = last = 0
            depth = MaxDepth()
            for level, b in pyramid(depth.watch(_merged_rows(parts)), levels, mixed=mixed):
                tally[level - 1] += 1
                if level == 1:
                    busy += b.busy
                    last = max(last, b.end)
                if level >= lowest:
                    yield (
                        level, lane, b.start, b.end, b.events, b.children, b.busy, b.top,
                        *(b.mix or _NO_MIX),
                    )  # fmt: skip
            extent = (sum(p.count for p in parts), min(p.first_start for p in parts), last, busy)
            row = _lane_row(trace_id, lane, key, extent, tally, scan, queues, multi_rank)
            lane_rows.append(row | {"max_depth": depth.value})

    def gap_rows() -> Iterator[tuple[Any, ...]]:
        """Every GPU lane's idle gaps, from its level-1 blocks made again as a stream (cheaper
        than holding them: a launch-bound lane has about one block per kernel)."""
        for key, lane in lane_ids.items():
            if key.family == GPU:
                blocks = first_level(_merged_rows(parts_of(key)))
                for g in find_gaps(blocks, key.rank, scan.launches, runtime, sync):
                    yield (
                        lane, g.start, g.dur, g.cause, g.next_event_id, g.launch_event_id,
                        g.cpu_runtime_ns, g.cpu_sync_ns,
                    )  # fmt: skip

    dataset.write_blocks(block_rows())
    conn.execute(insert(TimelineLane), _fit_lane_rows(conn, lane_rows))
    dataset.write_gaps(gap_rows())
    _insert(conn, TimelineSpan, _span_rows(trace_id, scan.longs, lane_ids))
    _insert(conn, TimelineName, _name_rows(trace_id, scan.names))
    if conn.dialect.name == "postgresql":
        # Fresh bulk-loaded tables have no statistics; without them the planner chose
        # sequential scans and the window p95 on a 1M-event trace was 240 ms, not 54 ms.
        tables: tuple[type[SQLModel], ...] = _TABLES
        names = ", ".join(table_of(t).name for t in tables)
        conn.exec_driver_sql(f"ANALYZE {names}")


def _fit_lane_rows(conn: Connection, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`rows` without the columns the database's `timeline_lanes` lacks: `perfdash db
    upgrade` re-ingests a database from before the columnar store at revision 0014, before
    later lane columns (`max_depth`, 0016) exist; they get their server defaults then."""
    have = {c["name"] for c in inspect(conn).get_columns(table_of(TimelineLane).name)}
    if not rows or rows[0].keys() <= have:
        return rows
    return [{k: v for k, v in row.items() if k in have} for row in rows]


def _device_lanes(lanes: dict[LaneKey, Lane]) -> dict[LaneKey, list[Lane]]:
    """Hidden lanes: all GPU work of a device (its GPU lanes merged), for the utilisation
    strip."""
    by_device: dict[LaneKey, list[Lane]] = {}
    for key, lane in lanes.items():
        if key.family == GPU:
            by_device.setdefault(LaneKey(DEVICE, key.rank, key.a, None), []).append(lane)
    return by_device


def _merged_rows(parts: list[Lane]) -> Iterator[Row]:
    """The rows of one lane, or of several merged (a device lane), in sort order."""
    streams = [part.rows() for part in parts]
    return streams[0] if len(streams) == 1 else heapq.merge(*streams)


def _lane_row(
    trace_id: str,
    lane: int,
    key: LaneKey,
    extent: tuple[int, int, int, int],  # events, first start, last end, busy ns
    level_blocks: list[int],
    scan: Collected,
    queues: dict[int, object],
    multi_rank: bool,
) -> dict[str, Any]:
    count, first_ns, last_ns, busy_ns = extent
    comm = key in scan.comm and 2 * scan.comm[key] >= count
    first_kernel = scan.first_kernel.get(key)
    queue = queues.get(first_kernel) if first_kernel is not None else None
    gpu = key.family in lanes_mod.GPU_FAMILIES or key.family == DEVICE
    return {
        "trace_id": trace_id, "lane": lane, "family": key.family,
        "label": lanes_mod.lane_label(
            key, communication=comm, queue=queue, show_rank=multi_rank
        )[:200],
        "rank": key.rank, "device": key.a if gpu else None, "stream": key.b if gpu else None,
        "pid": None if gpu else key.a, "tid": None if gpu else key.b,
        "hidden": key.family == DEVICE, "events": count,
        "busy_ns": busy_ns, "first_ns": first_ns, "last_ns": last_ns,
        "level_blocks": level_blocks,
    }  # fmt: skip


def _queues(events_path: Path, first_ids: list[int]) -> dict[int, object]:
    """AMD traces name GPU lanes by queue: read `args.queue` of each lane's first kernel
    (a lane's first event may be a copy, which carries no queue); Metal (xctrace) traces
    by GPU channel, `args.channel`."""
    if not first_ids:
        return {}
    sql = "SELECT id, args FROM {events} WHERE id IN (SELECT unnest(?)) AND args IS NOT NULL"
    queues = {}
    for event_id, text in query_file(events_path, sql, [first_ids]):
        args = orjson.loads(text)
        if isinstance(args, dict) and args.get("queue") is not None:
            queues[event_id] = args["queue"]
        elif isinstance(args, dict) and isinstance(args.get("channel"), str):
            queues[event_id] = lanes_mod.Channel(args["channel"])
    return queues


def _span_rows(
    trace_id: str, longs: list[tuple[int, LaneKey, int, int]], lane_ids: dict[LaneKey, int]
) -> Iterator[dict[str, Any]]:
    for event_id, key, start, end in longs:
        yield {
            "trace_id": trace_id, "dclass": length_class(end - start), "start_ns": start,
            "event_id": event_id, "lane": lane_ids[key], "end_ns": end,
        }  # fmt: skip


def _name_rows(trace_id: str, names: dict[tuple[str, str], list[int]]) -> Iterator[dict[str, Any]]:
    for (kind, name), (count, total, first, last) in names.items():
        yield {
            "trace_id": trace_id, "kind": kind, "name_key": name_key(name), "name": name,
            "count": count,
            "total_ns": total, "first_ns": first, "last_ns": last,
        }  # fmt: skip


def _insert(conn: Connection, model: type[SQLModel], rows: Iterable[dict[str, Any]]) -> None:
    """Bulk insert dict rows (all with the same keys) through `bulk_insert`."""
    it = iter(rows)
    first = next(it, None)
    if first is None:
        return
    values = (tuple(row.values()) for row in chain([first], it))
    bulk_insert(conn, table_of(model).name, list(first), values)
