"""Reading input files: transparent gzip, with a hard cap on decompressed size.

Gzip is inflated with `isal` (about twice zlib's speed) where it is installed. zlib stays
the reference: when the isal reader meets a corrupt or truncated stream or the size cap, a
zlib pass over the file raises the error, so messages and offsets are zlib's, as before.
"""

from __future__ import annotations

import gzip
import zlib
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ingest.errors import ParseError

try:
    from isal import isal_zlib as _isal_zlib
except ImportError:  # pragma: no cover - isal is a dependency; zlib serves where it has no wheel
    _isal_zlib = None  # type: ignore[assignment]
isal_zlib: Any = _isal_zlib  # None without isal

GZIP_MAGIC = b"\x1f\x8b"
DEFAULT_MAX_DECOMPRESSED = 4 * 1024**3
GZIP_WBITS = zlib.MAX_WBITS | 16


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


class ByteStream:
    """Decompressed chunks of a file with a size cap, counting progress in raw file bytes.

    `raw_done` / `raw_total` are positions in the file as stored (compressed, for gzip), so a
    progress bar moves with what was actually read from disk.
    """

    def __init__(
        self, path: Path, *, max_bytes: int, source: str, chunk_size: int = 1 << 22
    ) -> None:
        self.path, self.max_bytes, self.source, self.chunk_size = (
            path,
            max_bytes,
            source,
            chunk_size,
        )
        self.raw_total = path.stat().st_size
        self.raw_done = 0
        self.decompressed = 0
        with path.open("rb") as raw:
            self.gzipped = raw.read(2) == GZIP_MAGIC
        self.inflater: Callable[[int], Any] = (
            zlib.decompressobj if isal_zlib is None else isal_zlib.decompressobj
        )

    def chunks(self) -> Iterator[bytes]:
        """Yield decompressed chunks.

        Raises:
            ParseError: truncated or corrupt gzip, or more than `max_bytes` of output.
        """
        with self.path.open("rb") as raw:
            if not self.gzipped:
                while chunk := raw.read(self.chunk_size):
                    self._count(len(chunk))
                    self.raw_done = raw.tell()
                    yield chunk
                return
            if self.inflater is zlib.decompressobj:
                yield from self._inflate(raw, zlib.decompressobj, zlib.error)
                return
            try:
                yield from self._inflate(raw, self.inflater, isal_zlib.error)
            except ParseError:
                # zlib's reader is the reference for every failure: its message and offset
                self._reference(zlib.decompressobj)._read_through()
                raise  # zlib read the whole file: keep isal's error

    def _inflate(
        self, raw: Any, inflater_of: Callable[[int], Any], error: type[Exception]
    ) -> Iterator[bytes]:
        inflater = inflater_of(GZIP_WBITS)
        try:
            while data := raw.read(self.chunk_size // 4):
                self.raw_done = raw.tell()
                while data:
                    if inflater.eof:  # concatenated gzip members: the next one starts here
                        inflater = inflater_of(GZIP_WBITS)
                    out = inflater.decompress(data, self.chunk_size)
                    if out:
                        self._count(len(out))
                        yield out
                    # Once a member ends, its leftover input is the next member, in
                    # unused_data; unconsumed_tail may still hold the same bytes, and
                    # feeding it to the ended inflater would never consume them.
                    data = inflater.unused_data if inflater.eof else inflater.unconsumed_tail
        except error as e:
            raise ParseError(
                f"gzip stream is corrupt: {e}", source=self.source, offset=self.decompressed
            ) from e
        if not inflater.eof:
            raise ParseError(
                "gzip stream is truncated (it ends before the end of the compressed data)",
                source=self.source,
                offset=self.decompressed,
            )

    def _reference(self, inflater: Callable[[int], Any]) -> ByteStream:
        """Another pass over the same file, inflating with `inflater`."""
        other = ByteStream(
            self.path, max_bytes=self.max_bytes, source=self.source, chunk_size=self.chunk_size
        )
        other.inflater = inflater
        return other

    def _read_through(self) -> None:
        """Read the whole stream, keeping nothing: raises what reading it raises."""
        for _ in self.chunks():
            pass

    def tail(self, size: int) -> tuple[int, bytes]:
        """The last `size` decompressed bytes and their offset (a full pass for gzip)."""
        if not self.gzipped:
            with self.path.open("rb") as raw:
                start = max(0, self.raw_total - size)
                raw.seek(start)
                return start, raw.read(size)
        window: deque[bytes] = deque()
        kept = 0
        pass_ = self._reference(self.inflater)
        for chunk in pass_.chunks():
            window.append(chunk)
            kept += len(chunk)
            while kept - len(window[0]) >= size:
                kept -= len(window.popleft())
        data = b"".join(window)[-size:]
        return pass_.decompressed - len(data), data

    def _count(self, n: int) -> None:
        self.decompressed += n
        if self.decompressed > self.max_bytes:
            what = "gzip data decompresses to" if self.gzipped else "the file is"
            raise ParseError(
                f"{what} more than the {self.max_bytes}-byte limit "
                "(setting PERFDASH_MAX_DECOMPRESSED_BYTES)",
                source=self.source,
                offset=self.decompressed,
            )


def read_all(path: Path, *, max_bytes: int = DEFAULT_MAX_DECOMPRESSED, source: str = "") -> bytes:
    """Read the whole file, gunzipping it, refusing more than `max_bytes` of output
    (the same checks and messages as `ByteStream`, which it reads through).

    `source` is the name the user knows the file by, used in error messages.

    Raises:
        ParseError: the gzip stream is truncated or corrupt, or decompresses past the cap.
    """
    stream = ByteStream(path, max_bytes=max_bytes, source=source or path.name)
    return b"".join(stream.chunks())
