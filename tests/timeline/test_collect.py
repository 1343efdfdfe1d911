"""The index is collected from the event batches while they are written: the result must
not depend on row order or batching, must break launch ties as the read-back did, and must
equal a rebuild from the events stored in the trace's dataset, on both databases."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
from sqlalchemy import text
from sqlalchemy.engine import Engine

from backend.core.config import get_settings
from backend.services.datasets import EVENT_SCHEMA, DatasetWriter
from backend.services.timeline.collect import SPILL_ROWS, Collected, TimelineCollector
from backend.services.timeline.index import write_timeline_index
from ingest import parse_file
from tests.factories import Ingest, stored_events
from tests.timeline.conftest import H200

REPO = Path(__file__).resolve().parents[2]
NSYS = REPO / "tests" / "data" / "nsys" / "train_step.sqlite"
_INDEX_TABLES = ("timeline_lanes", "timeline_spans", "timeline_names")


def _rows(path: Path) -> list[tuple[Any, ...]]:
    """The events the ingest writes as tuples in `EVENT_SCHEMA` order (ids from 1, args
    left out), so that tests can shuffle and cut them before they become batches."""
    return [
        (i, e.kind.value, e.name, e.start_ns, e.dur_ns, e.rank, e.device, e.stream, e.pid,
         e.tid, e.correlation, None)
        for i, e in enumerate(parse_file(path).events, start=1)
    ]  # fmt: skip


def _batch(rows: list[tuple[Any, ...]]) -> pa.RecordBatch:
    columns: list[tuple[Any, ...]] = list(zip(*rows, strict=True)) or [() for _ in EVENT_SCHEMA]
    return pa.RecordBatch.from_arrays(
        [pa.array(c, type=f.type) for c, f in zip(columns, EVENT_SCHEMA, strict=True)],
        schema=EVENT_SCHEMA,
    )


def _collect(batches: list[list[tuple[Any, ...]]], spill_rows: int = SPILL_ROWS) -> Collected:
    collector = TimelineCollector(spill_rows=spill_rows)
    for batch in batches:
        collector.add(_batch(batch))
    return collector.finish()


def _comparable(c: Collected) -> dict[str, Any]:
    return {
        "lanes": {key: list(lane.rows()) for key, lane in c.lanes.items()},
        "names": c.names, "comm": c.comm, "first_kernel": c.first_kernel,
        "launches": dict(c.launches), "longs": sorted(c.longs),
        "runtime": {t: sorted(v) for t, v in c.runtime.items()},
        "sync": {t: sorted(v) for t, v in c.sync.items()},
    }  # fmt: skip


def test_row_order_and_batching_do_not_change_what_is_collected() -> None:
    for path in (NSYS, H200):
        rows = _rows(path)
        expected = _comparable(_collect([rows]))
        assert expected["launches"] and expected["first_kernel"] and expected["sync"]
        shuffled = rows[:]
        random.Random(3).shuffle(shuffled)
        batches = [shuffled[i : i + 777] for i in range(0, len(shuffled), 777)]
        assert _comparable(_collect(batches)) == expected, path.name


def test_columns_spilled_to_disk_collect_the_same() -> None:
    """A trace longer than `SPILL_ROWS` keeps its columns in a temporary file; what is
    collected must not change, in arrival order, in a few runs, or in no order at all."""
    for path in (NSYS, H200):
        rows = _rows(path)
        batches = [rows[i : i + 1000] for i in range(0, len(rows), 1000)]
        in_memory = _comparable(_collect(batches))
        assert _comparable(_collect(batches, spill_rows=3000)) == in_memory, path.name
        halves = [*batches[len(batches) // 2 :], *batches[: len(batches) // 2]]  # 2 runs
        assert _comparable(_collect(halves, spill_rows=2500)) == in_memory, path.name
    shuffled = rows[:]
    random.Random(5).shuffle(shuffled)
    assert _comparable(_collect([shuffled[i : i + 999] for i in range(0, len(rows), 999)],
                                spill_rows=4000)) == in_memory  # fmt: skip


def test_a_lane_in_a_few_sorted_runs_streams_in_sort_order() -> None:
    """Rows of one lane arriving in a few sorted runs (ranks' files, steps out of order)
    are merged run by run; ties on start order by end, then name, then id. Past
    `_MAX_RUNS` runs the group is sorted whole; both give the same rows."""

    def op(event_id: int, start: int, dur: int, name: str) -> tuple[Any, ...]:
        return (event_id, "cpu_op", name, start, dur, None, None, None, 1, 1, None, None)

    runs = [
        [op(1, 100, 50, "b"), op(2, 100, 50, "a"), op(3, 200, 5, "c")],  # 2 runs: tie by name
        [op(4, 0, 10, "x"), op(5, 100, 20, "y")],  # starts again from 0
        [op(6, 100, 50, "a"), op(7, 150, 1, "z")],  # ties (start, end, name): by id
    ]
    rows = [row for run in runs for row in run]
    expected = sorted((r[3], r[3] + r[4], r[2], r[0], None) for r in rows)
    for batches in ([rows], [rows[:4], rows[4:]]):
        (lane,) = _collect(batches).lanes.values()
        assert list(lane.rows()) == expected
        assert list(lane.rows()) == expected, "each call streams afresh"
        assert (lane.count, lane.first_start, lane.last_end) == (7, 0, 205)
    many = [op(i, 1000 - i, 1, "n") for i in range(200)]  # 200 runs of one row each
    (lane,) = _collect([many]).lanes.values()
    assert list(lane.rows()) == sorted((r[3], r[3] + 1, "n", r[0], None) for r in many)


def test_a_shared_correlation_launches_from_the_latest_call() -> None:
    def call(event_id: int, start: int, tid: int) -> tuple[Any, ...]:
        return (event_id, "runtime", "cudaLaunchKernel", start, 10, None, None, None, 1, tid,
                42, None)  # fmt: skip

    rows = [call(5, 300, 1), call(9, 300, 2), call(7, 100, 1)]
    for order in (rows, rows[::-1]):
        launch = _collect([order]).launches[(None, 42)]
        assert (launch.id, launch.start, launch.thread) == (9, 300, (None, 1, 2))
    assert list(_collect([rows]).launches) == [(None, 42)]


def _index(engine: Engine, trace_id: str, folder: Path) -> dict[str, list[str]]:
    """The trace's index: its SQL tables, and the blocks and gaps files in `folder`."""
    with engine.connect() as conn:
        tables = {
            table: sorted(
                map(str, conn.execute(text(f"SELECT * FROM {table} WHERE trace_id = :t"),
                                      {"t": trace_id}))
            )
            for table in _INDEX_TABLES
        }  # fmt: skip
    for file in ("blocks", "gaps"):
        tables[file] = sorted(map(str, pq.read_table(folder / f"{file}.parquet").to_pylist()))
    return tables


def _dataset_folder(engine: Engine, trace_id: str) -> Path:
    with engine.connect() as conn:
        query = text("SELECT dataset FROM traces WHERE id = :t")
        dataset = conn.execute(query, {"t": trace_id}).scalar_one()
    return get_settings().blob_dir / "datasets" / trace_id / dataset


def test_the_ingest_index_equals_a_rebuild_from_the_stored_events(
    ingest: Ingest, engine: Engine
) -> None:
    for path in (NSYS, H200):
        trace_id = ingest(path)
        at_ingest = _index(engine, trace_id, _dataset_folder(engine, trace_id))
        assert all(at_ingest.values())
        rows = [
            tuple(
                orjson.dumps(e["args"]).decode() if c == "args" and e["args"] else e[c]
                for c in EVENT_SCHEMA.names
            )
            for e in stored_events(engine, trace_id)
        ]
        collector = TimelineCollector()
        collector.add(_batch(rows))
        rebuilt = DatasetWriter(get_settings().blob_dir, f"rebuilt-{trace_id}", "test")
        rebuilt.write(_batch(rows))
        rebuilt.close_events()
        with engine.begin() as conn:
            write_timeline_index(conn, trace_id, collector.finish(), rebuilt)
        rebuilt.commit()
        assert _index(engine, trace_id, rebuilt.events_path.parent) == at_ingest, path.name


def test_a_missing_key_is_its_own_lane_not_zero() -> None:
    """Grouping fills nulls for the sort, so None and 0 must still be told apart."""

    def op(event_id: int, rank: int | None, tid: int | None) -> tuple[Any, ...]:
        return (event_id, "cpu_op", "op", event_id * 10, 5, rank, None, None, 1, tid, None, None)

    rows = [op(1, None, 0), op(2, 0, 0), op(3, None, None), op(4, 0, None), op(5, None, 0)]
    lanes = _collect([rows]).lanes
    assert [(k.rank, k.b, lane.count) for k, lane in lanes.items()] == [
        (None, 0, 2), (0, 0, 1), (None, None, 1), (0, None, 1)
    ]  # fmt: skip
