"""The nsys parser with its row readers only (the sqlite3 path, before Arrow): the reference
the Arrow readers (`ingest.parsers._nsys_arrow`) must equal."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from ingest import Event, parse_file
from ingest.events import ParseReport
from ingest.parsers import _nsys_events as tables
from ingest.parsers import nsys

ROW_READERS: dict[str, nsys._Reader] = {
    tables.KERNEL: lambda src, cols: tables.kernels(src.conn, cols),
    tables.MEMCPY: lambda src, cols: tables.memcpys(src.conn, cols),
    tables.MEMSET: lambda src, cols: tables.memsets(src.conn, cols),
    tables.SYNC: lambda src, cols: tables.syncs(src.conn, cols),
    tables.RUNTIME: lambda src, cols: tables.runtime_calls(src.conn, cols, src.report),
    tables.NVTX: lambda src, cols: tables.nvtx_ranges(src.conn, cols, src.report),
    tables.GRAPH_NODES: nsys.READERS[tables.GRAPH_NODES],
}


@contextmanager
def row_readers() -> Iterator[None]:
    """`nsys.READERS` replaced by the row readers for the duration."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(nsys, "READERS", ROW_READERS)
        yield


def events(path: Path, *, rows: bool = False) -> tuple[list[Event], ParseReport]:
    """Every event of `path` one at a time, through the Arrow readers or (`rows`) not."""
    if rows:
        with row_readers():
            parsed = parse_file(path)
            return list(parsed.events), parsed.report
    parsed = parse_file(path)
    return list(parsed.events), parsed.report
