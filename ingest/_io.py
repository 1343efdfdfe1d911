"""Reading input files: transparent gzip, with a hard cap on decompressed size."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

from ingest.errors import ParseError

GZIP_MAGIC = b"\x1f\x8b"
DEFAULT_MAX_DECOMPRESSED = 4 * 1024**3
_CHUNK = 1 << 20


def read_head(path: Path, size: int = 4096) -> bytes:
    """Return the first `size` bytes of the file, decompressed if it is gzip."""
    with path.open("rb") as raw:
        magic = raw.read(2)
    try:
        if magic == GZIP_MAGIC:
            with gzip.open(path, "rb") as f:
                return f.read(size)
        with path.open("rb") as f:
            return f.read(size)
    except (OSError, EOFError, zlib.error):
        # A damaged gzip stream: return what sniffing needs and let the parser report it.
        return magic


def read_all(path: Path, *, max_bytes: int = DEFAULT_MAX_DECOMPRESSED, source: str = "") -> bytes:
    """Read the whole file, gunzipping it, refusing more than `max_bytes` of output.

    `source` is the name the user knows the file by, used in error messages.

    Raises:
        ParseError: the gzip stream is truncated or corrupt, or decompresses past the cap.
    """
    with path.open("rb") as raw:
        if raw.read(2) != GZIP_MAGIC:
            raw.seek(0)
            data = raw.read(max_bytes + 1)
            if len(data) > max_bytes:
                raise ParseError(
                    f"file is larger than the {max_bytes}-byte limit", source=source or path.name
                )
            return data
    chunks: list[bytes] = []
    total = 0
    try:
        with gzip.open(path, "rb") as f:
            while chunk := f.read(_CHUNK):
                total += len(chunk)
                if total > max_bytes:
                    raise ParseError(
                        f"gzip data decompresses to more than {max_bytes} bytes",
                        source=source or path.name,
                        offset=total,
                    )
                chunks.append(chunk)
    except (EOFError, zlib.error, gzip.BadGzipFile) as e:
        raise ParseError(
            f"gzip stream is truncated or corrupt: {e}", source=source or path.name, offset=total
        ) from e
    return b"".join(chunks)
