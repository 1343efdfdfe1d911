"""The dataset writer stores the same events file however its Arrow batches were cut:
it buffers them into `ROW_GROUP`-row groups, each sorted by (kind, start) in Arrow."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from backend.services.datasets import DatasetWriter
from backend.services.datasets.writer import ROW_GROUP
from backend.services.loading.batches import event_batches
from ingest import Event, EventKind

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
