"""CSV reading shared by every rocprof table: header checks and typed cells that name file+line.

rocprof writes quoted and unquoted CSV, integers in decimal or hex, and floats in exponent
form; a bad cell becomes a `ParseError` that says which file, line and column, because the
person who uploaded a folder of twenty CSVs needs to know which one is wrong.

Files are read by pyarrow in bounded blocks (`ingest.parsers._csv_arrow`). Large tables are
converted a column at a time (`Columns`); small ones (agents, stats, counters) row by row
(`Row`), with the same cell rules: `Row.opt_int` is the reference `Columns.ints` follows.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator
from pathlib import Path

import pyarrow.compute as pc

from ingest._io import read_head
from ingest.parsers._csv_arrow import WHITESPACE, CsvError, CsvSource, Piece
from ingest.parsers.rocprof._columns import Columns, cell_float, cell_int

__all__ = ["Columns", "CsvError", "CsvTable", "Row", "open_table", "parse_header", "read_header"]


class Row:
    """One data row; typed getters raise `CsvError` naming the file, line and column.

    `line` is the line number, or for a row read by pyarrow its record number, turned into
    a line by `locate` only when an error needs it.
    """

    __slots__ = ("_index", "cells", "line", "locate", "source")

    def __init__(
        self,
        cells: list[str],
        index: dict[str, int],
        line: int,
        source: str,
        locate: CsvSource | None = None,
    ) -> None:
        self.cells = cells
        self._index = index
        self.line = line
        self.source = source
        self.locate = locate

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
        value, message = cell_int(self.text(column), column)
        if message:
            raise self.error(message)
        return value

    def opt_float(self, column: str) -> float | None:
        """The cell as a float, None when absent or empty."""
        value, message = cell_float(self.text(column), column)
        if message:
            raise self.error(message)
        return value

    def error(self, message: str) -> CsvError:
        """A `CsvError` at this row."""
        line = self.line if self.locate is None else self.locate.line_of(self.line)
        return CsvError(message, source=self.source, location=f"line {line}")


class CsvTable:
    """A parsed header plus a one-shot reader of its rows (as `Row`s or as `Columns`)."""

    def __init__(self, source: CsvSource) -> None:
        self.csv = source
        self.source = source.source
        self.header = source.header
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

    def chunks(self, *, exact_width: bool = False) -> Iterator[Columns]:
        """Data rows as column blocks, blank rows left out.

        Every column is read (no `include_columns`): a row is blank, and skipped, when
        every one of its cells is whitespace, the csv reader's rule. A row with more cells
        than the header is cut, as the csv readers did, unless `exact_width`.

        Raises:
            CsvError: with `exact_width`, a row with more fields than the header (after the
                rows before it): a table whose names are unquoted would otherwise be blamed
                on whichever column the shifted cells land in.
        """
        for piece in self.csv.pieces():
            if exact_width and piece.width is not None and piece.width > len(self.header):
                raise CsvError(
                    f"{piece.width} fields where the header has {len(self.header)}: a value "
                    "holds an unquoted comma (a kernel name such as 'k<float, 2>'?), so the "
                    "columns after it cannot be told apart",
                    source=self.source,
                    location=f"line {self.csv.line_of(piece.first)}",
                )
            columns = _non_blank(piece)
            if columns is not None:
                yield columns(self)

    def rows(self, *, exact_width: bool = False) -> Iterator[Row]:
        """Data rows in file order, skipping blank lines (`exact_width`: see `chunks`)."""
        for chunk in self.chunks(exact_width=exact_width):
            cells = [c.to_pylist() for c in chunk.raw]
            for cells_row, record in zip(zip(*cells, strict=True), chunk.records, strict=True):
                yield Row(list(cells_row), self.index, record, self.source, self.csv)


def _non_blank(piece: Piece) -> _Pending | None:
    """The piece's rows that have a non-blank cell, with their record numbers."""
    if not piece.columns:
        return None
    keep = None
    for column in piece.columns:
        filled = pc.not_equal(pc.utf8_trim(column, WHITESPACE), "")
        keep = filled if keep is None else pc.or_(keep, filled)
    if keep is None or not pc.any(keep).as_py():
        return None
    if pc.all(keep).as_py():
        records = list(range(piece.first, piece.first + len(piece)))
        return _Pending(piece.columns, records)
    index = pc.indices_nonzero(keep)
    records = [piece.first + i for i in index.to_pylist()]
    return _Pending([c.take(index) for c in piece.columns], records)


class _Pending:
    """Filtered columns waiting for the table that names them."""

    def __init__(self, raw: list, records: list[int]) -> None:  # type: ignore[type-arg]
        self.raw, self.records = raw, records

    def __call__(self, table: CsvTable) -> Columns:
        return Columns(table, self.raw, self.records)


def open_table(path: Path, *, max_bytes: int, source: str) -> CsvTable:
    """Open a (possibly gzipped) CSV file as a `CsvTable`, reading its header only.

    Raises:
        ParseError: an unreadable header (the rows are checked as they are read).
    """
    return CsvTable(CsvSource(path, max_bytes=max_bytes, source=source, error=CsvError))


def parse_header(text: str, source: str) -> list[str]:
    """The header cells of CSV text, stripped, BOM removed.

    Raises:
        CsvError: the header is no CSV (a cell over the csv module's size limit).
    """
    try:
        header = next(csv.reader(io.StringIO(text, newline="")), [])
    except csv.Error as e:
        raise CsvError(f"unreadable CSV header: {e}", source=source, location="line 1") from e
    return [h.strip().lstrip("\ufeff") for h in header]


def read_header(path: Path, source: str) -> list[str]:
    """The first CSV line of a file, for classification without reading it all."""
    head = read_head(path, 16384).decode("utf-8-sig", errors="replace")
    return parse_header(head.split("\n", 1)[0], source)
