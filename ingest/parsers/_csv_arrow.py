"""Streaming CSV reading with pyarrow: string columns in bounded blocks, for rocprof and ncu.

pyarrow's C++ reader (`pyarrow.csv.open_csv`) parses at most `BLOCK_SIZE` bytes at a time, so
memory stays flat however long the file; the parsers convert whole columns at once
(`_csv_columns`). Every cell is read as a string: the sources are irregular (hex, ``n/a``,
thousands separators), so typing is the parsers' job, column by column.

The rules of the `csv`-module readers this replaced are kept, because users' files were
read under them: a row with fewer or more cells than the header is padded with empty cells
or cut (pyarrow hands such a row to `invalid_row_handler`; its text is re-read with `csv`
and slotted back in file order, by record number); a cell longer than `FIELD_LIMIT`
characters is refused, as `csv` refuses it; text that is not UTF-8 is refused with the
offset of its first bad byte. Errors name the file and the line: pyarrow numbers records,
so the line of a record is found by reading the file again with `csv`, on the error path
only (`CsvSource.line_of`).
"""

from __future__ import annotations

import codecs
import csv
import io
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import IO, Any, cast

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from ingest._io import ByteStream
from ingest.errors import ParseError

BLOCK_SIZE = 1 << 22  # bytes parsed at a time; one record must fit in one block
FIELD_LIMIT = 131072  # `csv.field_size_limit()`'s default, which the old readers had
# str.strip's set: every character whose `isspace()` is true (a test checks it; computing it
# here took 0.15 s at every import of the parsers)
WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
    "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


class CsvError(ParseError):
    """A CSV cell or header is wrong; carries the line number in `location`."""


class _Chunks(io.RawIOBase):
    """A file-like view of an iterator of byte chunks (a `ByteStream`), for pyarrow."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._left = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._left:
            self._left = next(self._chunks, b"")
            if not self._left:
                return 0
        n = min(len(buffer), len(self._left))
        buffer[:n] = self._left[:n]
        self._left = self._left[n:]
        return n


def text_chunks(path: Path, size: int = 1 << 22) -> Iterator[bytes]:
    """The file's bytes with every invalid UTF-8 sequence replaced by U+FFFD, as
    ``open(path, encoding="utf-8", errors="replace")`` reads it."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    with path.open("rb") as f:
        while chunk := f.read(size):
            yield decoder.decode(chunk).encode()
        yield decoder.decode(b"", final=True).encode()


def _options(names: list[str], wanted: list[int], on_invalid: Any) -> dict[str, Any]:
    """`pyarrow.csv.open_csv`'s options: every cell a string (empty, never null), bounded
    blocks, one thread (records are numbered in file order), ragged rows to `on_invalid`."""
    return {
        "read_options": pacsv.ReadOptions(
            column_names=names, block_size=BLOCK_SIZE, use_threads=False
        ),
        "parse_options": pacsv.ParseOptions(
            newlines_in_values=True, ignore_empty_lines=False, invalid_row_handler=on_invalid
        ),
        "convert_options": pacsv.ConvertOptions(
            column_types=dict.fromkeys(names, pa.string()),
            include_columns=[names[i] for i in wanted],
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
        ),
    }


@dataclass(slots=True)
class Piece:
    """Consecutive data rows: one string array per header column, and the record number of
    the first row (the header is record 1; blank lines count). A row whose cell count
    differs from the header's comes alone, padded or cut, with its own count in `width`."""

    columns: list[pa.Array]
    first: int
    width: int | None = None

    def __len__(self) -> int:
        return len(self.columns[0]) if self.columns else 0


class CsvSource:
    """A CSV file's header and its rows as `Piece`s, read once, in file order.

    Args:
        path: the (possibly gzipped) file.
        max_bytes: cap on the decompressed size.
        source: the file name errors quote.
        error: the `ParseError` class raised (callers keep their own error types).
        start: byte offset of the header (ncu files have a preamble before it).
        start_line: the header's line number.
        as_text: read the file as ncu's reader did, as plain text (no gunzip) with bytes
            that are not UTF-8 replaced by U+FFFD (`text_chunks`), instead of refusing them.
        header: the header as the caller read it (its cell count is the row width), when
            not the first CSV record at `start`.
    """

    def __init__(
        self,
        path: Path,
        *,
        max_bytes: int,
        source: str,
        error: type[ParseError] = CsvError,
        start: int = 0,
        start_line: int = 1,
        as_text: bool = False,
        header: list[str] | None = None,
    ) -> None:
        self.path, self.max_bytes, self.source = path, max_bytes, source
        self.error_type, self.start, self.start_line = error, start, start_line
        self.as_text = as_text
        self.raw_header = self._read_header() if header is None else header
        self.header = [h.strip().lstrip("\ufeff") for h in self.raw_header]

    def error(self, message: str, record: int | None = None) -> ParseError:
        """An error at `record` (its line found by re-reading), or at the header."""
        line = self.start_line if record is None else self.line_of(record)
        return self.error_type(message, source=self.source, location=f"line {line}")

    def _stream(self) -> io.BufferedIOBase:
        if self.as_text:
            chunks = text_chunks(self.path)
        else:
            chunks = ByteStream(self.path, max_bytes=self.max_bytes, source=self.source).chunks()
        reader = io.BufferedReader(_Chunks(chunks), buffer_size=1 << 20)
        if self.start:
            reader.read(self.start)
        return reader

    def _read_header(self) -> list[str]:
        with self._stream() as stream:
            head = stream.read(BLOCK_SIZE)
        try:
            text = codecs.getincrementaldecoder("utf-8-sig")().decode(head)
        except UnicodeDecodeError as e:
            raise self._not_utf8(e.start) from e
        try:
            return next(csv.reader(io.StringIO(text, newline="")), [])
        except csv.Error as e:
            raise self.error(f"unreadable CSV header: {e}") from e

    def pieces(self, include: list[int] | None = None) -> Iterator[Piece]:
        """Data rows in file order; `include` limits the columns read (others are empty).

        Raises:
            ParseError: not UTF-8, a cell over `FIELD_LIMIT` characters, a record over
                `BLOCK_SIZE` bytes, or a file over `max_bytes`.
        """
        width = len(self.raw_header)
        if not width:
            return
        names = [f"c{i}" for i in range(width)]
        wanted = list(range(width)) if include is None else sorted(set(include))
        ragged: deque[tuple[int, str]] = deque()

        def on_invalid(row: Any) -> str:
            ragged.append((row.number, row.text))
            return "skip"

        stream = self._stream()
        try:
            reader = self._open(stream, **_options(names, wanted, on_invalid))
            if reader is None:
                return
            yield from self._merge(self._batches(reader), ragged, wanted, width)
        finally:
            stream.close()

    def _open(self, stream: io.BufferedIOBase, **options: Any) -> Any:
        try:
            return pacsv.open_csv(stream, **options)
        except pa.ArrowInvalid as e:
            if "Empty CSV" in str(e):
                return None
            raise self._arrow_error(e) from e

    def _batches(self, reader: Any) -> Iterator[list[pa.Array]]:
        while True:
            try:
                batch = reader.read_next_batch()
            except StopIteration:
                return
            except pa.ArrowInvalid as e:
                raise self._arrow_error(e) from e
            yield batch.columns

    def _merge(
        self,
        batches: Iterator[list[pa.Array]],
        ragged: deque[tuple[int, str]],
        wanted: list[int],
        width: int,
    ) -> Iterator[Piece]:
        """Batch rows and re-read ragged rows, in record order, the header left out."""
        record = 1  # the next record's number
        for columns in chain(batches, [None]):
            rows, i = (len(columns[0]) if columns else 0), 0
            while i < rows or (ragged and (columns is None or ragged[0][0] == record)):
                if ragged and (ragged[0][0] == record or i >= rows):
                    number, text = ragged.popleft()
                    if number < record:
                        raise self.error("the CSV has a row pyarrow could not place")
                    cells = next(csv.reader(io.StringIO(text, newline="")), [])
                    full = (cells + [""] * width)[:width]
                    piece = Piece([pa.array([c], pa.string()) for c in full], number, len(cells))
                else:
                    stop = ragged[0][0] - record if ragged else rows - i
                    n = min(rows - i, stop)
                    blank = pa.nulls(n, pa.string()).fill_null("")
                    full = [blank] * width
                    for j, column in zip(wanted, columns or [], strict=True):
                        full[j] = column.slice(i, n)
                    piece = Piece(full, record)
                    i += n
                record = piece.first + len(piece)
                if piece.first == 1:  # the header itself
                    piece = Piece([c.slice(1) for c in piece.columns], 2, piece.width)
                if len(piece):
                    self._check_limit(piece)
                    yield piece

    def _check_limit(self, piece: Piece) -> None:
        for column in piece.columns:
            if len(column) and pc.max(pc.utf8_length(column)).as_py() > FIELD_LIMIT:
                row = pc.index(pc.greater(pc.utf8_length(column), FIELD_LIMIT), True).as_py()
                raise self.error(
                    f"malformed CSV: field larger than field limit ({FIELD_LIMIT})",
                    piece.first + row,
                )

    def _not_utf8(self, offset: int | None) -> ParseError:
        return ParseError("the CSV is not UTF-8 text", source=self.source, offset=offset)

    def _arrow_error(self, e: pa.ArrowInvalid) -> ParseError:
        text = str(e)
        bad = self._bad_utf8()  # a ragged row that is not UTF-8 fails as a parse error
        if bad is not None or "UTF8" in text:
            return self._not_utf8(bad)
        if "straddling" in text or "block" in text:
            return self.error_type(
                f"a CSV record is longer than {BLOCK_SIZE >> 20} MiB "
                "(a quote never closed, or a runaway line)",
                source=self.source,
            )
        return self.error_type(f"malformed CSV: {text}", source=self.source)

    def _bad_utf8(self) -> int | None:
        """The offset of the first byte that is not UTF-8, counted after a leading BOM as
        ``bytes.decode("utf-8-sig")`` counts it."""
        decoder = codecs.getincrementaldecoder("utf-8")()
        with self._stream() as stream:
            bom = not self.start and stream.read(3) == codecs.BOM_UTF8
        done = -3 if bom else 0
        with self._stream() as stream:
            while chunk := stream.read(1 << 20):
                pending = len(decoder.getstate()[0])
                try:
                    decoder.decode(chunk)
                except UnicodeDecodeError as e:
                    return self.start + done - pending + e.start
                done += len(chunk)
        return None

    def field_counts(self, records: set[int]) -> dict[int, int]:
        """How many cells the csv module reads in each of these records (pyarrow reads an
        empty line as a row of empty cells; the csv module as no cells)."""
        out: dict[int, int] = {}
        with self._stream() as stream:
            binary = cast(IO[bytes], stream)
            text = io.TextIOWrapper(binary, encoding="utf-8-sig", errors="replace", newline="")
            for n, cells in enumerate(csv.reader(text), start=1):
                if n in records:
                    out[n] = len(cells)
                    if len(out) == len(records):
                        break
        return out

    def line_of(self, record: int) -> int:
        """The line (as `csv.reader.line_num` counts) where record number `record` ends."""
        with self._stream() as stream:
            binary = cast(IO[bytes], stream)
            text = io.TextIOWrapper(binary, encoding="utf-8-sig", errors="replace", newline="")
            reader = csv.reader(text)
            try:
                for n, _ in enumerate(reader, start=1):
                    if n >= record:
                        break
            except csv.Error:
                pass
            return self.start_line - 1 + reader.line_num
