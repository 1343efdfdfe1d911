"""Errors raised by `ingest`: one family, so callers catch `IngestError` and nothing else.

Every error says what was wrong and where (byte offset or event index), because the
message is shown verbatim to the person who uploaded the file. The one exception is
`DiskFullError`: the server's fault, not the file's, so it is no `IngestError`.
"""

from __future__ import annotations

import errno


class IngestError(ValueError):
    """Base class: the input is not a trace perfdash can read. Never retried."""


class UnsupportedFormatError(IngestError):
    """The bytes are not in any format perfdash reads (or one it does not read yet)."""


class ParseError(IngestError):
    """The file looks like a known format but is malformed.

    Args:
        message: what was wrong, in plain words.
        source: the file name the user knows.
        offset: byte offset into the (decompressed) file, when known.
        location: a structural location such as ``traceEvents[41]``, when known.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str = "",
        offset: int | None = None,
        location: str | None = None,
    ) -> None:
        self.message = message
        self.source = source
        self.offset = offset
        self.location = location
        super().__init__(str(self))

    def __str__(self) -> str:
        where = [p for p in (self.source, self.location) if p]
        if self.offset is not None:
            where.append(f"byte {self.offset}")
        return f"{self.message} ({', '.join(where)})" if where else self.message


class DiskFullError(OSError):
    """The server's disk (scratch space for archives, temporary files) is full.

    Not an `IngestError`: the upload is not at fault, so the trace is not failed as a bad
    file; the ingest is tried again later.
    """


_DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


def is_disk_full(error: BaseException) -> bool:
    """Whether `error`, or an error it was raised from, says the disk is full (ENOSPC, or a
    quota: EDQUOT)."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, DiskFullError) or (
            isinstance(seen, OSError) and seen.errno in _DISK_FULL_ERRNOS
        ):
            return True
        seen = seen.__cause__ or seen.__context__
    return False
