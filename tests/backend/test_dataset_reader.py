"""The dataset reader closes every DuckDB cursor it opens before the call is done.

A cursor left in a request thread's locals is destroyed when that thread exits; if that
happens while the interpreter shuts down, DuckDB's destructor is cut off by CPython ending
the thread and the process aborts (`terminate called ... FATAL: exception not rethrown`,
exit status 134). perf/compare_before_after.py saw it in about one run in seven of a
TestClient session that ends right after its requests.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from backend.services.datasets import reader


class _Counted:
    """A DuckDB connection whose cursors are counted as they open and close."""

    def __init__(self, real: duckdb.DuckDBPyConnection) -> None:
        self.real, self.open = real, 0

    def cursor(self) -> _Cursor:
        self.open += 1
        return _Cursor(self.real.cursor(), self)


class _Cursor:
    def __init__(self, real: duckdb.DuckDBPyConnection, owner: _Counted) -> None:
        self._real, self._owner, self._closed = real, owner, False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def cursor(self) -> _Cursor:
        return self._owner.cursor()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._owner.open -= 1
        self._real.close()

    def __enter__(self) -> _Cursor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def test_queries_in_a_thread_leave_no_cursor_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "events.parquet"
    pq.write_table(pa.table({"id": list(range(1, 1001))}), path)
    counted = _Counted(duckdb.connect(":memory:"))
    monkeypatch.setattr(reader, "_shared", lambda: counted)
    monkeypatch.setattr(reader, "events_file", lambda trace: path)
    sql = "SELECT sum(id) FROM {events}"
    got: list[Any] = []

    def requests() -> None:  # as a server's worker thread would
        got.append(reader.query_file(path, sql)[0][0])
        got.append(sum(row[0] for b in reader.batches_of_events(None, sql) for row in b))  # type: ignore[arg-type]
        got.append(sum(b.column(0)[0].as_py() for b in reader.arrow_batches_of_events(None, sql)))  # type: ignore[arg-type]

    thread = threading.Thread(target=requests)
    thread.start()
    thread.join()
    assert got == [500500] * 3
    assert counted.open == 0
