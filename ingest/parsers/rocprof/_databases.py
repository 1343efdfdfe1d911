"""Which rocprof tool wrote an SQLite file, from the tables in it.

rocprofv3 writes rocpd (``rocpd_metadata`` and friends, perhaps ``_<uuid>``-suffixed); legacy
rocprof v1 writes ``results.db`` beside its ``results.csv``/``results.json``, with one table
per trace section (``OPS``, ``HIP``, ``HSA``, ``COPY``, ``KFD``) holding ``BeginNs``/``EndNs``,
and ``KERN`` of kernel names. Only rocpd is read: a v1 database repeats the CSV and JSON of the
same run, which perfdash reads instead.

Public surface: `database_kind`, `ROCPD`, `V1_DB`, `V1_DB_NOTE`.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

ROCPD = "rocpd"
V1_DB = "rocprof v1"
V1_DB_NOTE = (
    "a rocprof v1 results.db (tables OPS/HIP/COPY with BeginNs/EndNs); perfdash reads the "
    "results.csv and results.json rocprof writes beside it, so upload those or the whole "
    "output folder"
)
_V1_SECTIONS = ("OPS", "HIP", "HSA", "COPY", "KFD")


def database_kind(path: Path) -> str | None:
    """`ROCPD`, `V1_DB`, or None for an SQLite file of neither tool (or an unreadable one)."""
    try:
        with closing(
            sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
        ) as c:
            names = {str(r[0]) for r in c.execute("SELECT name FROM sqlite_master")}
            if any(n == "rocpd_metadata" or n.startswith("rocpd_metadata") for n in names):
                return ROCPD
            for section in _V1_SECTIONS:
                if section in names:
                    cols = {r[1] for r in c.execute(f'PRAGMA table_info("{section}")')}
                    if {"BeginNs", "EndNs"} <= cols:
                        return V1_DB
    except (sqlite3.Error, UnicodeDecodeError):
        return None
    return None
