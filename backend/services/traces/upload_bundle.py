"""Several files uploaded together become one zip blob, read later as one trace.

That is how a multi-file upload of the rank files of one job turns into one multi-rank
trace: the ingest side already reads archives (`ingest.registry`). Members are stored
uncompressed (rank files are usually gzip already) under their base names only, so a
client-chosen name can never become a path.

Public surface: `bundle_uploads`.
"""

from __future__ import annotations

import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import PurePosixPath, PureWindowsPath
from typing import BinaryIO

from backend.services.errors import InvalidInputError, TooLargeError

_COPY_CHUNK = 1 << 20


def bundle_uploads(files: Sequence[tuple[str, BinaryIO]], *, max_bytes: int) -> BinaryIO:
    """A temporary file holding a zip of `files` (name, stream); the caller closes it.

    Raises:
        TooLargeError: the files together exceed `max_bytes`.
        InvalidInputError: a file is empty.
    """
    out = tempfile.TemporaryFile()  # noqa: SIM115 - returned to the caller, who closes it
    used: set[str] = set()
    total = 0
    try:
        with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
            for raw_name, stream in files:
                name = _unique(_base_name(raw_name), used)
                with zf.open(name, "w", force_zip64=True) as member:
                    size = 0
                    while chunk := stream.read(_COPY_CHUNK):
                        size += len(chunk)
                        total += len(chunk)
                        if total > max_bytes:
                            raise TooLargeError(
                                f"the files together are larger than the {max_bytes}-byte limit"
                            )
                        member.write(chunk)
                if size == 0:
                    raise InvalidInputError(f"{name}: the file is empty")
    except BaseException:
        out.close()
        raise
    out.seek(0)
    return out


def _base_name(raw: str) -> str:
    name = PureWindowsPath(PurePosixPath(raw or "trace").name).name
    cleaned = "".join(c for c in name if c.isprintable() and c not in '\\/:*?"<>|')
    return cleaned.strip(". ") or "trace"


def _unique(name: str, used: set[str]) -> str:
    candidate, n = name, 1
    while candidate in used:
        n += 1
        candidate = f"{n}-{name}"
    used.add(candidate)
    return candidate


__all__ = ["bundle_uploads"]
