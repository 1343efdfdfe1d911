"""Removing datasets: a deleted trace's, a re-ingested trace's older ones, and orphans.

A dataset is removed only when no trace row names it. A worker killed between renaming its
dataset into place and committing the trace row leaves one that no row names, and one
killed while writing leaves a `.tmp-*` folder: the sweeper removes both once they are older
than the ingest's hard time limit, so a live ingest is never touched.

Public surface: `remove_trace_datasets`, `sweep_datasets`; `remove_if_empty` for the writer.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
from collections.abc import Callable
from pathlib import Path

from backend.services.datasets.layout import DATASETS, TEMP_PREFIX, trace_datasets_dir

log = logging.getLogger(__name__)


def remove_trace_datasets(blob_dir: Path, trace_id: str, *, keep: str | None = None) -> None:
    """Remove every complete dataset of `trace_id` except `keep` (a deleted trace keeps
    none). In-progress `.tmp-*` attempts are left to their writer or the sweeper."""
    folder = trace_datasets_dir(blob_dir, trace_id)
    if not folder.is_dir():
        return
    for path in folder.iterdir():
        if path.name != keep and not path.name.startswith(TEMP_PREFIX):
            shutil.rmtree(path, ignore_errors=True)
    if keep is None:
        remove_if_empty(folder)


def sweep_datasets(
    blob_dir: Path, *, named: Callable[[str], str | None], before: float
) -> list[str]:
    """Remove datasets no trace row names and temporary folders, last changed before
    `before` (a Unix time); return their paths relative to the store.

    Args:
        named: the dataset name a trace row holds now, or None (asked per trace, after the
            age check, so a trace committed meanwhile keeps its dataset).
    """
    root = blob_dir / DATASETS
    removed: list[str] = []
    if not root.is_dir():
        return removed
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        stale = [p for p in folder.iterdir() if p.is_dir() and p.stat().st_mtime < before]
        if not stale:
            continue
        keep = named(folder.name)
        for path in stale:
            if path.name == keep:
                continue
            shutil.rmtree(path, ignore_errors=True)
            removed.append(f"{folder.name}/{path.name}")
        remove_if_empty(folder)
    if removed:
        log.warning("dataset sweeper: removed %d datasets no trace names", len(removed))
    return removed


def remove_if_empty(folder: Path) -> None:
    with contextlib.suppress(OSError):  # not empty (an attempt in progress) or already gone
        folder.rmdir()
