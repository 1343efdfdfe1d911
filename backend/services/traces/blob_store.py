"""Content-addressed storage of uploaded bytes, on a folder every worker mounts.

Blobs are written to a temporary file, hashed on the way, and renamed into place, so a
reader never sees half a blob and the same bytes are stored once. A process killed
mid-upload leaves its `.upload-*` file, and one killed between the rename and the trace's
commit leaves a blob no row names: `stale_temp_files`, `stale_blobs` and `remove_orphan`
let the sweeper (`backend.services.traces.blob_sweep`) find and remove both.
"""

import errno
import hashlib
import logging
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from backend.services.errors import InvalidInputError, StorageFullError, TooLargeError

log = logging.getLogger(__name__)
_CHUNK = 1 << 20
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)
TEMP_PREFIX = ".upload-"
_QUARANTINE_PREFIX = ".orphan-"
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class StoredBlob:
    sha256: str
    size_bytes: int
    path: Path


def blob_path(root: Path, sha256: str) -> Path:
    """Where the blob with this hash lives (two-level fan-out keeps folders small)."""
    return root / sha256[:2] / sha256


def put_blob(root: Path, stream: BinaryIO, *, max_bytes: int) -> StoredBlob:
    """Copy `stream` into the store, hashing it, and return where it landed.

    Raises:
        TooLargeError: the stream is longer than `max_bytes`; nothing is kept.
        InvalidInputError: the stream is empty.
        StorageFullError: the disk (or quota) is full; the partial file is removed.
    """
    try:
        return _put(root, stream, max_bytes=max_bytes)
    except OSError as e:
        if e.errno not in _NO_SPACE:
            raise
        log.error("blob store %s is full: %s", root, e)
        raise StorageFullError(
            "the trace store is full (no space left on the server's disk); nothing was "
            "stored, try again after an operator frees space"
        ) from e


def _put(root: Path, stream: BinaryIO, *, max_bytes: int) -> StoredBlob:
    root.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    size = 0
    fd, tmp_name = tempfile.mkstemp(dir=root, prefix=TEMP_PREFIX)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            while chunk := stream.read(_CHUNK):
                size += len(chunk)
                if size > max_bytes:
                    raise TooLargeError(f"upload is larger than the {max_bytes}-byte limit")
                digest.update(chunk)
                out.write(chunk)
        if size == 0:
            raise InvalidInputError("the uploaded file is empty")
        final = blob_path(root, digest.hexdigest())
        final.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.replace(tmp, final)
        except FileNotFoundError as e:  # stalled past ORPHAN_BLOB_AFTER_S and swept
            raise InvalidInputError(
                "the upload stalled so long that its partial file was removed; send it again"
            ) from e
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return StoredBlob(sha256=digest.hexdigest(), size_bytes=size, path=final)


def delete_blob(root: Path, sha256: str) -> None:
    """Remove a blob if it exists."""
    blob_path(root, sha256).unlink(missing_ok=True)


def stale_temp_files(root: Path, *, before: float) -> list[Path]:
    """`.upload-*` files last written before `before` (a Unix time): a live upload writes
    its file at every chunk, so only a dead (or stalled) one is this old."""
    if not root.is_dir():
        return []
    return [p for p in root.glob(f"{TEMP_PREFIX}*") if _mtime(p) < before]


def stale_blobs(root: Path, *, before: float) -> list[str]:
    """The hashes of blobs written before `before`; blobs a killed sweeper left set aside
    are put back first. Only names of the store's own shape are listed, never another file."""
    if not root.is_dir():
        return []
    for aside in root.glob(f"{_QUARANTINE_PREFIX}*"):
        sha = aside.name.removeprefix(_QUARANTINE_PREFIX)
        if _SHA256.fullmatch(sha):
            _put_back(aside, blob_path(root, sha))
    return sorted(
        p.name
        for folder in root.glob("[0-9a-f][0-9a-f]")
        if folder.is_dir()
        for p in folder.iterdir()
        if p.name.startswith(folder.name) and _SHA256.fullmatch(p.name) and _mtime(p) < before
    )


def remove_orphan(
    root: Path, sha256: str, *, wanted: Callable[[str], bool], written_after: float
) -> bool:
    """Remove a blob no trace named a moment ago, unless `wanted(sha256)` now says a row
    names it or the blob was rewritten after `written_after`.

    The blob is renamed aside before the row is looked up again: an upload of the same
    bytes that lands meanwhile writes a new file in its place (kept), and one that landed
    just before shows by its fresh time (put back). Returns whether the blob was removed.
    """
    aside = root / f"{_QUARANTINE_PREFIX}{sha256}"
    final = blob_path(root, sha256)
    try:
        os.replace(final, aside)
    except FileNotFoundError:
        if not aside.exists():
            return False  # another sweeper has it, or it is gone
    try:
        keep = _mtime(aside) >= written_after or wanted(sha256)
    except BaseException:
        _put_back(aside, final)
        raise
    if keep:
        _put_back(aside, final)
        return False
    aside.unlink(missing_ok=True)
    return True


def _put_back(aside: Path, final: Path) -> None:
    """Return a blob set aside, unless an upload already wrote the same bytes in place."""
    try:
        if final.exists():
            aside.unlink()
        else:
            os.replace(aside, final)
    except FileNotFoundError:
        pass  # another sweeper dealt with it first


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return float("inf")  # gone meanwhile: never stale
