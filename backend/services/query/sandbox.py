"""A DuckDB database that can read one trace's events and nothing else.

Each query gets a fresh in-memory database. `allowed_paths` names the trace's
`events.parquet`, then `enable_external_access = false` shuts every other file, URL and
glob out (`read_csv('/etc/passwd')`, another trace's dataset, `s3://...`, `ATTACH`,
`COPY`, `EXPORT`); the documented views are created over the file, and the configuration
is locked last, so no `SET` or `PRAGMA` can reopen anything or raise a limit.

- No extension is installed or loaded on demand (httpfs, postgres_scanner...).
- `python_enable_replacements = false`: a query cannot scan a Python variable of the
  server process by naming it.
- `temp_directory = ''`: nothing spills to disk; past `memory_limit` a query fails.

Why DuckDB's own Parquet reader and not a registered `pyarrow.dataset`: over an Arrow
scan an ASOF join did not finish in 5 s where the Parquet reader took 17 ms (DuckDB
2.0.1, the 186k-event H200 trace), and a group-by over all events took 3.6x as long.

The statement-type check in `run.py` is a second wall: only one SELECT reaches DuckDB.

The query's child reads the trace through `private_link`, a hard link in a fresh private
temporary folder (made and removed by the API process around the child), so
`duckdb_settings()` (`allowed_paths`) and the views' SQL name that link, not where the
blob store is. DuckDB resolves symbolic links before it checks a path, so only a hard
link (same file system) can do this.

Public surface: `open_sandbox`, `private_link`.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from backend.services.datasets import EVENT_SCHEMA
from backend.services.query.views import DATASET, VIEWS

logger = logging.getLogger(__name__)


def open_sandbox(
    events: Path | None, *, threads: int, memory_limit: str
) -> duckdb.DuckDBPyConnection:
    """A locked database whose views read `events` (an `events.parquet`).

    Args:
        events: the trace's events file; None for an empty table of the same schema
            (the schema endpoint's types).
        threads: DuckDB worker threads for this query.
        memory_limit: DuckDB's memory limit (`'1GB'`...).

    Returns:
        The connection; the caller closes it.
    """
    con = duckdb.connect(
        ":memory:",
        config={
            "autoload_known_extensions": False,
            "autoinstall_known_extensions": False,
            "python_enable_replacements": False,
            "temp_directory": "",
            "threads": threads,
            "memory_limit": memory_limit,
        },
    )
    try:
        if events is None:
            con.register(f"{DATASET}_empty", EVENT_SCHEMA.empty_table())
            source = f"{DATASET}_empty"
        else:
            quoted = str(events).replace("'", "''")
            con.execute(f"SET allowed_paths = ['{quoted}']")
            source = f"read_parquet('{quoted}')"
        con.execute("SET enable_external_access = false")
        con.execute(f"CREATE VIEW {DATASET} AS SELECT * FROM {source}")
        for view in VIEWS:
            con.execute(f"CREATE VIEW {view.name} AS {view.sql}")
        con.execute("SET lock_configuration = true")
    except BaseException:
        con.close()
        raise
    return con


@contextmanager
def private_link(events: Path) -> Iterator[Path]:
    """`events` under a name that says nothing of the blob store: a hard link in a fresh
    temporary folder (mode 0700), removed on exit. Where the temporary folder is on another
    file system than the blob store (no hard link can cross), the real path is used and a
    warning logged: set TMPDIR to a folder on the blob store's file system.
    """
    folder = Path(tempfile.mkdtemp(prefix="perfdash-query-"))
    try:
        link = folder / events.name
        try:
            os.link(events, link)
        except OSError as e:
            logger.warning("query reads %s by its real path: no hard link to it (%s)", events, e)
            link = events
        yield link
    finally:
        shutil.rmtree(folder, ignore_errors=True)
