"""Write a trace's events as one zstd Parquet file, all or nothing.

Rows arrive in batches (the ingest's `event_rows.COLUMNS` order, trace id included, as the
timeline collector also reads them) and are buffered into row groups of `ROW_GROUP` rows.
Each group is sorted by (kind, start_ns) before it is written, so a time window of one kind
of event reads few pages and the integer columns compress well. The file is written in a
temporary folder; `commit` fsyncs it and renames the folder to its final name.

Public surface: `DatasetWriter`, `ROW_GROUP`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from backend.services.datasets.layout import (
    EVENT_SCHEMA,
    EVENTS_FILE,
    TEMP_PREFIX,
    dataset_dir,
    trace_datasets_dir,
)

ROW_GROUP = 65_536
# Positions of the stored columns in an ingest row (position 1 is the trace id).
_POSITIONS = (0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)
_SORT = [("kind", "ascending"), ("start_ns", "ascending")]


class DatasetWriter:
    """One ingest attempt's dataset for one trace.

    Use `write` for each batch of rows, then `commit` (returns the dataset's name) or, on
    any failure, `discard`, which removes whatever this attempt wrote, committed or not.
    """

    def __init__(self, blob_dir: Path, trace_id: str, parser_version: str) -> None:
        self.name = f"v{parser_version}-{uuid.uuid4().hex[:12]}"
        self._final = dataset_dir(blob_dir, trace_id, self.name)
        self._temp = trace_datasets_dir(blob_dir, trace_id) / f"{TEMP_PREFIX}{self.name}"
        self._temp.mkdir(parents=True)
        self._writer: pq.ParquetWriter | None = pq.ParquetWriter(
            self._temp / EVENTS_FILE,
            EVENT_SCHEMA,
            compression="zstd",
            use_dictionary=["kind", "name", "args"],
            column_encoding={"id": "DELTA_BINARY_PACKED", "correlation": "DELTA_BINARY_PACKED"},
            write_statistics=True,
        )
        self.path = self._final / EVENTS_FILE  # once committed
        self._pending: list[Sequence[Any]] = []
        self.rows = 0

    def write(self, rows: list[tuple[Any, ...]]) -> None:
        """Add a batch of ingest rows; full row groups are written as they fill."""
        self._pending.extend(rows)
        self.rows += len(rows)
        while len(self._pending) >= ROW_GROUP:
            group, self._pending = self._pending[:ROW_GROUP], self._pending[ROW_GROUP:]
            self._write_group(group)

    def commit(self) -> str:
        """Flush, fsync and move the dataset to its final name; return that name."""
        if self._pending:
            self._write_group(self._pending)
            self._pending = []
        assert self._writer is not None, "commit called twice"
        self._writer.close()
        self._writer = None
        _fsync(self._temp / EVENTS_FILE)
        os.rename(self._temp, self._final)
        _fsync(self._final.parent)
        return self.name

    def discard(self) -> None:
        """Remove this attempt's files (temporary or already renamed)."""
        if self._writer is not None:
            with contextlib.suppress(Exception):
                self._writer.close()
            self._writer = None
        shutil.rmtree(self._temp, ignore_errors=True)
        shutil.rmtree(self._final, ignore_errors=True)
        with contextlib.suppress(OSError):  # the trace's folder, unless another dataset is in it
            self._final.parent.rmdir()

    def _write_group(self, rows: Sequence[Sequence[Any]]) -> None:
        assert self._writer is not None
        columns = list(zip(*rows, strict=True))
        arrays = [
            pa.array(columns[position], type=field.type)
            for position, field in zip(_POSITIONS, EVENT_SCHEMA, strict=True)
        ]
        table = pa.Table.from_arrays(arrays, schema=EVENT_SCHEMA).sort_by(_SORT)
        self._writer.write_table(table, row_group_size=ROW_GROUP)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
