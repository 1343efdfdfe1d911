"""The blob sweeper: partial uploads, and blobs and datasets no trace names, removed once old.

An API process killed mid-upload leaves its `.upload-*` file in the blob store, and one
killed (or one whose database failed) between storing a blob and committing its trace
leaves a blob that no row names. Workers run `sweep_blobs` beside the trace sweeper
(`workers/sweeper.py`). Both kinds are removed only when older than ORPHAN_BLOB_AFTER_S,
so a live upload (which writes its file at every chunk and commits right after the
rename) is never touched. Datasets (`backend.services.datasets`) left by a killed ingest
wait at least the ingest's hard time limit, past which no attempt can still be writing.

Public surface: `sweep_blobs`, `BlobSweepResult`.
"""

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from backend.core.config import Settings
from backend.models import Trace
from backend.services.datasets import sweep_datasets
from backend.services.traces.blob_store import remove_orphan, stale_blobs, stale_temp_files

log = logging.getLogger(__name__)
_BATCH = 500


@dataclass
class BlobSweepResult:
    """What one sweep removed: partial upload files by name, orphaned blobs by hash,
    datasets as `trace_id/name`."""

    partial: list[str] = field(default_factory=list)
    orphans: list[str] = field(default_factory=list)
    datasets: list[str] = field(default_factory=list)


def sweep_blobs(*, engine: Engine, settings: Settings, now: float | None = None) -> BlobSweepResult:
    """Remove `.upload-*` files and trace-less blobs last written ORPHAN_BLOB_AFTER_S ago.

    Args:
        engine: the database the trace rows are in.
        settings: gives the blob store and the age threshold.
        now: the Unix time to judge age by (tests move it forward).

    Returns:
        What was removed.
    """
    root = settings.blob_dir
    before = (time.time() if now is None else now) - settings.orphan_blob_after_s
    result = BlobSweepResult()
    for path in stale_temp_files(root, before=before):
        path.unlink(missing_ok=True)
        result.partial.append(path.name)
    candidates = stale_blobs(root, before=before)
    for start in range(0, len(candidates), _BATCH):
        batch = candidates[start : start + _BATCH]
        named = _named(engine, batch)
        for sha in batch:
            if sha in named:
                continue
            wanted = partial(_is_named, engine)  # asked again once the blob is set aside
            if remove_orphan(root, sha, wanted=wanted, written_after=before):
                result.orphans.append(sha)
    oldest_ingest = max(settings.orphan_blob_after_s, settings.ingest_time_limit_s)
    result.datasets = sweep_datasets(
        root,
        named=partial(_dataset_of, engine),
        before=(time.time() if now is None else now) - oldest_ingest,
    )
    if result.partial or result.orphans:
        log.warning(
            "blob sweeper: removed %d partial upload files and %d blobs no trace names",
            len(result.partial),
            len(result.orphans),
        )
    return result


def _named(engine: Engine, shas: Sequence[str]) -> set[str]:
    """The hashes among `shas` that a trace row names."""
    with Session(engine) as session:
        found = session.exec(select(Trace.blob_sha256).where(col(Trace.blob_sha256).in_(shas)))
        return set(found)


def _dataset_of(engine: Engine, trace_id: str) -> str | None:
    """The dataset the trace row names now (None: no such trace, or none yet)."""
    with Session(engine) as session:
        return session.exec(select(Trace.dataset).where(col(Trace.id) == trace_id)).first()


def _is_named(engine: Engine, sha: str) -> bool:
    return bool(_named(engine, [sha]))
