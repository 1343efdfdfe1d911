"""The analyses derived once from an events file, stored beside it (issue #35, part 2).

An ingest calls `derive_analyses` on each events part it writes, before the dataset is
renamed into place; the analysis routes then answer from these small tables, merged over
the parts with DuckDB (`derived.query_derived`), instead of rebuilding Python trees from
millions of events on every request. A part holds whole ranks, and each rank is derived on
its own, so what is held in memory is one rank's trees. Event ids are used only as a tie
break in an order, never as a range.

`ensure_analyses` derives a dataset written before these tables (or by an older
`ANALYSES_VERSION`) once, on its first read: into a temporary folder, then renamed into
the dataset's, the manifest last, under a lock file so two requests (or processes) do not
both derive it.

Public surface: `derive_analyses`, `ensure_analyses`, `Derived`.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from backend.services.analysis.comm_derive import comm_kernel_table
from backend.services.analysis.gpu_derive import gpu_tables
from backend.services.analysis.memory_derive import memory_tables
from backend.services.analysis.op_derive import operator_tables
from backend.services.analysis.op_tree import build_forest, no_gc_pauses
from backend.services.analysis.stack_tree import stack_tree_table
from backend.services.analysis.stored import read_events_file
from backend.services.datasets import (
    ANALYSES_VERSION,
    ANALYSIS_TABLES,
    TEMP_PREFIX,
    analyses_manifest,
    analyses_manifests,
    analysis_file,
    analysis_glob,
)

log = logging.getLogger(__name__)
_RANKS = "SELECT DISTINCT rank FROM {events} ORDER BY rank NULLS FIRST"
_LOCK_FILE = ".analyses.lock"
_in_process = threading.Lock()


@dataclass(frozen=True, slots=True)
class Derived:
    """What one part's derivation wrote."""

    part: str
    rows: dict[str, int]  # table -> rows
    seconds: float


def derive_analyses(events_file: Path, out_dir: Path, part: str) -> Derived:
    """Derive every analysis table of one events file into `out_dir`.

    Args:
        events_file: one events Parquet file (`layout.EVENT_SCHEMA`) holding whole ranks.
        out_dir: where `<table>-<part>.parquet` and the part's manifest are written.
        part: the part's name, unique among the dataset's parts ("0" for a whole trace).

    Returns:
        The rows written per table and the time taken.
    """
    started = time.perf_counter()
    ranks: list[int | None] = [r for (r,) in read_events_file(events_file, _RANKS)]
    ops = operator_tables()
    with no_gc_pauses():
        for rank in ranks:
            ops.add(rank, build_forest(events_file, rank))
        tables: dict[str, pa.Table] = {
            **ops.tables(),
            "stack_tree": stack_tree_table(events_file, ranks),
            **gpu_tables(events_file, ranks),
            "comm_kernels": comm_kernel_table(events_file),
            **memory_tables(events_file),
        }
    for table, rows in tables.items():
        pq.write_table(rows, analysis_file(out_dir, table, part), compression="zstd")
    derived = Derived(
        part, {t: rows.num_rows for t, rows in tables.items()}, time.perf_counter() - started
    )
    manifest = {"version": ANALYSES_VERSION, "rows": derived.rows, "seconds": derived.seconds}
    analyses_manifest(out_dir, part).write_text(json.dumps(manifest), encoding="utf-8")
    return derived


def ensure_analyses(events_file: Path) -> None:
    """Derive the dataset's analyses if they are missing or out of date (a dataset written
    before them); a no-op, one `stat` per part, once they are there."""
    folder = events_file.parent
    if _current(folder):
        return
    with _in_process, _file_lock(folder):
        if _current(folder):  # another request or process derived it meanwhile
            return
        log.info("deriving the analyses of %s (written before them)", folder)
        temp = folder / f"{TEMP_PREFIX}analyses-{uuid.uuid4().hex[:12]}"
        temp.mkdir()
        try:
            derived = derive_analyses(events_file, temp, "0")
            manifest = analyses_manifest(temp, "0")
            _remove_analyses(folder)  # an older version's parts, which would add up twice
            for path in sorted(temp.iterdir(), key=lambda p: p == manifest):  # manifest last
                os.replace(path, folder / path.name)
        finally:
            shutil.rmtree(temp, ignore_errors=True)
        log.info("derived the analyses of %s in %.2f s", folder, derived.seconds)


def _remove_analyses(folder: Path) -> None:
    """Every part's manifest (first: the tables are incomplete from here) and tables."""
    for manifest in analyses_manifests(folder):
        manifest.unlink()
    for table in ANALYSIS_TABLES:
        for path in folder.glob(Path(analysis_glob(folder, table)).name):
            path.unlink()


def _current(folder: Path) -> bool:
    """Whether every part's manifest is there and of this version."""
    manifests = analyses_manifests(folder)
    return bool(manifests) and all(_version(m) == ANALYSES_VERSION for m in manifests)


def _version(manifest: Path) -> int | None:
    try:
        version = json.loads(manifest.read_text(encoding="utf-8")).get("version")
    except (OSError, ValueError):
        return None
    return version if isinstance(version, int) else None


@contextmanager
def _file_lock(folder: Path) -> Iterator[None]:
    """An exclusive lock on the dataset folder's lock file, across processes."""
    with (folder / _LOCK_FILE).open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
