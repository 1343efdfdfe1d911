"""Content-addressed storage of uploaded bytes, on a folder every worker mounts.

Blobs are written to a temporary file, hashed on the way, and renamed into place, so a
reader never sees half a blob and the same bytes are stored once.
"""

import errno
import hashlib
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from backend.services.errors import InvalidInputError, StorageFullError, TooLargeError

log = logging.getLogger(__name__)
_CHUNK = 1 << 20
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


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
    fd, tmp_name = tempfile.mkstemp(dir=root, prefix=".upload-")
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
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return StoredBlob(sha256=digest.hexdigest(), size_bytes=size, path=final)


def delete_blob(root: Path, sha256: str) -> None:
    """Remove a blob if it exists."""
    blob_path(root, sha256).unlink(missing_ok=True)
