"""Errors raised by `ingest`: one family, so callers catch `IngestError` and nothing else.

Every error says what was wrong and where (byte offset or event index), because the
message is shown verbatim to the person who uploaded the file.
"""

from __future__ import annotations


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
