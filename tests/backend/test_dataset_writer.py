"""The dataset writer stores the same events file however its Arrow batches were cut:
it buffers them into `ROW_GROUP`-row groups, each sorted by (kind, start) in Arrow."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from backend.services.datasets import DatasetWriter, flow_table
from backend.services.datasets.layout import FLOW_SCHEMA, FLOWS_FILE
from backend.services.datasets.writer import ROW_GROUP
from backend.services.loading.batches import event_batches
from ingest import Event, EventKind
from ingest.events import Flows

KINDS = (EventKind.KERNEL, EventKind.CPU_OP, EventKind.RUNTIME)


def _events(n: int) -> list[Event]:
    # Starts out of order and repeated, so the sort and its stability both matter.
    return [Event(KINDS[i % 3], f"e{i % 7}", (i * 7919) % 1000, 1) for i in range(n)]


def _written(tmp_path: Path, name: str, batches: list[pa.RecordBatch]) -> Path:
    """The events file of a dataset written from `batches`."""
    writer = DatasetWriter(tmp_path, name, "test")
    for batch in batches:
        writer.write(batch)
    assert writer.rows == sum(b.num_rows for b in batches)
    writer.commit()
    return writer.events_path


def test_the_file_does_not_depend_on_how_batches_are_cut(tmp_path: Path) -> None:
    events = _events(2 * ROW_GROUP + 123)
    whole = _written(tmp_path, "a", list(event_batches(events, size=len(events))))
    cut = _written(tmp_path, "b", list(event_batches(events, size=999)))
    assert cut.read_bytes() == whole.read_bytes()
    table = pq.read_table(whole)
    assert table.num_rows == len(events)
    first = table.slice(0, ROW_GROUP)
    keys = list(zip(first["kind"].to_pylist(), first["start_ns"].to_pylist(),
                    first["id"].to_pylist(), strict=True))  # fmt: skip
    assert keys == sorted(keys), "a buffer is sorted by (kind, start), ties in id order"
    assert sorted(table["id"].to_pylist()) == list(range(1, len(events) + 1))


def test_flows_bind_as_perfetto_binds_them_and_none_write_no_file(tmp_path: Path) -> None:
    """An `s` (or an `f` with `bp: "e"`) binds to the innermost event around it on its
    thread, an `f` without to the next event to start; a point on no event stays unbound,
    and a trace without flows gets no `flows.parquet` (what old datasets look like)."""
    ops = [
        Event(EventKind.CPU_OP, "outer", 100, 50, pid=1, tid=2),
        Event(EventKind.CPU_OP, "inner", 110, 10, pid=1, tid=2),
        Event(EventKind.CPU_OP, "later", 200, 5, pid=1, tid=2),
        Event(EventKind.CPU_OP, "other thread", 100, 50, pid=1, tid=3),
    ]
    writer = DatasetWriter(tmp_path, "t", "test")
    writer.write(next(event_batches(ops)))
    writer.close_events()
    flows = Flows()
    for phase, ts, enclosing in [("s", 115, False), ("f", 140, True), ("f", 160, False),
                                 ("t", 100, False), ("s", 500, False)]:  # fmt: skip
        flows.add(7, "fwdbwd", "fwdbwd", phase, ts, 1, 2, enclosing)
    table = flow_table(flows, None, writer.events_path)
    assert table.schema == FLOW_SCHEMA
    assert table["event_id"].to_pylist() == [2, 1, 3, 1, None]  # ids number `ops` from 1
    writer.write_flows(table)
    writer.write_flows(FLOW_SCHEMA.empty_table())  # nothing to add: the file stays as it was
    assert pq.read_table(writer.events_path.with_name(FLOWS_FILE)).equals(table)

    empty = DatasetWriter(tmp_path, "u", "test")
    empty.write_flows(FLOW_SCHEMA.empty_table())
    empty.commit()
    assert not empty.events_path.with_name(FLOWS_FILE).exists()
