"""CSV reading shared by every rocprof table: header checks and typed cells that name file+line.

rocprof writes quoted and unquoted CSV, integers in decimal or hex, and floats in exponent
form; a bad cell becomes a `ParseError` that says which file, line and column, because the
person who uploaded a folder of twenty CSVs needs to know which one is wrong.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator
from pathlib import Path

from ingest._io import read_all, read_head
from ingest.errors import ParseError


class CsvError(ParseError):
    """A CSV cell or header is wrong; carries the line number in `location`."""


class Row:
    """One data row; typed getters raise `CsvError` naming the file, line and column."""

    __slots__ = ("_index", "cells", "line", "source")

    def __init__(self, cells: list[str], index: dict[str, int], line: int, source: str) -> None:
        self.cells = cells
        self._index = index
        self.line = line
        self.source = source

    def has(self, column: str) -> bool:
        """Whether the file has this column."""
        return column in self._index

    def text(self, column: str, default: str = "") -> str:
        """The cell as a string (`default` when the column is absent or the row short)."""
        i = self._index.get(column)
        return self.cells[i].strip() if i is not None and i < len(self.cells) else default

    def req_int(self, column: str) -> int:
        """The cell as an integer; decimal, hex (``0x..``) and integral floats are accepted."""
        value = self.opt_int(column)
        if value is None:
            raise self.error(f"empty value in column {column!r}")
        return value

    def opt_int(self, column: str) -> int | None:
        """Like `int`, but None for an absent column or an empty cell."""
        raw = self.text(column)
        if not raw or raw.lower() in ("none", "nil", "n/a"):
            return None
        try:
            return int(raw, 0)
        except ValueError:
            try:
                number = float(raw)
            except ValueError:
                raise self.error(f"{raw[:40]!r} in column {column!r} is not a number") from None
            if number != number or number in (float("inf"), float("-inf")):
                raise self.error(f"{raw!r} in column {column!r} is not finite") from None
            return int(number)

    def opt_float(self, column: str) -> float | None:
        """The cell as a float, None when absent or empty."""
        raw = self.text(column)
        if not raw:
            return None
        try:
            return float(raw)
        except ValueError:
            raise self.error(f"{raw[:40]!r} in column {column!r} is not a number") from None

    def error(self, message: str) -> CsvError:
        """A `CsvError` at this row."""
        return CsvError(message, source=self.source, location=f"line {self.line}")


class CsvTable:
    """A parsed header plus a one-shot iterator over its rows."""

    def __init__(self, text: str, source: str) -> None:
        self.source = source
        self._reader = csv.reader(io.StringIO(text, newline=""))
        try:
            header = next(self._reader, [])
        except csv.Error as e:
            raise CsvError(f"unreadable CSV header: {e}", source=source, location="line 1") from e
        self.header = [h.strip().lstrip("\ufeff") for h in header]
        self.index = {name: i for i, name in enumerate(self.header)}

    def require(self, columns: Iterable[str], what: str) -> None:
        """Raise unless every column is present, listing the missing ones."""
        missing = [c for c in columns if c not in self.index]
        if missing:
            raise CsvError(
                f"{what} header is missing column(s) {', '.join(missing)}",
                source=self.source,
                location="line 1",
            )

    def rows(self) -> Iterator[Row]:
        """Data rows in file order, skipping blank lines."""
        reader = self._reader
        while True:
            try:
                cells = next(reader)
            except StopIteration:
                return
            except csv.Error as e:
                raise CsvError(
                    f"malformed CSV: {e}", source=self.source, location=f"line {reader.line_num}"
                ) from e
            if cells and any(c.strip() for c in cells):
                yield Row(cells, self.index, reader.line_num, self.source)


def open_table(path: Path, *, max_bytes: int, source: str) -> CsvTable:
    """Read a (possibly gzipped) CSV file into a `CsvTable`.

    Raises:
        ParseError: over the size cap, not UTF-8, or an unreadable header.
    """
    data = read_all(path, max_bytes=max_bytes, source=source)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ParseError("the CSV is not UTF-8 text", source=source, offset=e.start) from e
    return CsvTable(text, source)


def read_header(path: Path, source: str) -> list[str]:
    """The first CSV line of a file, for classification without reading it all."""
    head = read_head(path, 16384).decode("utf-8-sig", errors="replace")
    return CsvTable(head.split("\n", 1)[0], source).header
