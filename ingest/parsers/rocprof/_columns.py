"""A block of rocprof CSV rows converted a column at a time, with the row reader's cell rules.

Cells that pyarrow's cast reads exactly as Python does (plain decimal integers, plain
floats) are converted in C++; any other cell (hex, ``n/a``, exponent integers, garbage)
goes through the reference rules (`cell_int`, `cell_float`), so values and messages are
the row reader's. A bad cell does not raise at once: the row reader would have yielded
every row before it, so the block notes the first bad cell in row order (`cut`) and the
caller yields the rows before it, then raises `error()`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from ingest.parsers._csv_arrow import WHITESPACE, CsvError, CsvSource


class HeaderIndex(Protocol):
    """What a block reads of its `ingest.parsers.rocprof._csv.CsvTable` (which imports this
    module, so it is named by shape): column positions, the file's name, its line numbers."""

    @property
    def index(self) -> Mapping[str, int]: ...
    @property
    def source(self) -> str: ...
    @property
    def csv(self) -> CsvSource: ...


_PLAIN_INT = r"^-?[0-9]{1,18}$"
_PLAIN_FLOAT = r"^-?[0-9]{1,300}(\.[0-9]{1,300})?([eE][-+]?[0-9]{1,3})?$"


def cell_int(raw: str, column: str) -> tuple[int | None, str]:
    """A stripped cell as ``(int or None, "")``, or ``(None, why it is no integer)``.

    A fractional value (rocprof-compute writes timestamps as ``41551790928449.54``) is
    rounded to the nearest integer, read as a decimal so no digit is lost; truncating would
    bias every duration low (docs/FORMATS.md, "Public traces").

    >>> cell_int("0x1F", "q"), cell_int("1e3", "q"), cell_int("n/a", "q")
    ((31, ''), (1000, ''), (None, ''))
    >>> cell_int("41551790928449.54", "t"), cell_int("7.5", "t"), cell_int("-2.6", "t")
    ((41551790928450, ''), (8, ''), (-3, ''))
    """
    if not raw or raw.lower() in ("none", "nil", "n/a"):
        return None, ""
    try:
        return int(raw, 0), ""
    except ValueError:
        try:
            number = Decimal(raw)
        except InvalidOperation:
            return None, f"{raw[:40]!r} in column {column!r} is not a number"
        if not number.is_finite():
            return None, f"{raw!r} in column {column!r} is not finite"
        return int(number.to_integral_value(ROUND_HALF_UP)), ""


def cell_float(raw: str, column: str) -> tuple[float | None, str]:
    """A stripped cell as ``(float or None, "")``, or ``(None, why it is no number)``.

    >>> cell_float("1e3", "c"), cell_float("", "c"), cell_float("x", "c")[1]
    ((1000.0, ''), (None, ''), "'x' in column 'c' is not a number")
    """
    if not raw:
        return None, ""
    try:
        return float(raw), ""
    except ValueError:
        return None, f"{raw[:40]!r} in column {column!r} is not a number"


class Columns:
    """Rows of one table as columns, blank rows already left out.

    Args:
        table: the table (header index, source, line lookup).
        raw: one string array per header column.
        records: each row's record number (a line number once `line_of` maps it).
    """

    def __init__(self, table: HeaderIndex, raw: list[pa.Array], records: list[int]) -> None:
        self.table, self.raw, self.records = table, raw, records
        self._stripped: dict[int, pa.Array] = {}
        self._bad: tuple[int, int, str] | None = None
        self._checks = 0

    def __len__(self) -> int:
        return len(self.records)

    def has(self, name: str) -> bool:
        """Whether the file has this column."""
        return name in self.table.index

    def _column(self, name: str) -> pa.Array | None:
        i = self.table.index.get(name)
        if i is None:
            return None
        if i not in self._stripped:
            self._stripped[i] = pc.utf8_trim(self.raw[i], WHITESPACE)
        return self._stripped[i]

    def text(self, name: str, default: str = "") -> list[str]:
        """The column's cells, stripped (`default` in every row when it is absent)."""
        column = self._column(name)
        return [default] * len(self) if column is None else column.to_pylist()

    def ints(
        self, name: str, *, required: bool = False, when: Sequence[bool] | None = None
    ) -> list[int | None]:
        """The column as integers (`cell_int`'s rules); an empty cell is bad if `required`.

        `when`: the rows where the row reader would have read this cell at all (an
        ``a or b`` fallback); a bad cell elsewhere is not an error (its value is None).
        """
        return self._convert(name, pa.int64(), _PLAIN_INT, cell_int, required, when)

    def fractional(self, name: str) -> bool:
        """Whether any cell of the column has a fraction or an exponent (``123.45``)."""
        column = self._column(name)
        return column is not None and bool(
            pc.any(pc.match_substring_regex(column, "[.eE]")).as_py()
        )

    def floats(self, name: str) -> list[float | None]:
        """The column as floats (`cell_float`'s rules)."""
        return self._convert(name, pa.float64(), _PLAIN_FLOAT, cell_float, False, None)

    def span(self, start: str, end: str) -> tuple[list[int], list[int]]:
        """Start and duration from two required time columns; an end before its start is
        bad (`v3_csv._span`'s message). Rows from `cut` on hold placeholders."""
        starts = self.ints(start, required=True)
        ends = self.ints(end, required=True)
        self.flag_first(
            [s is not None and e is not None and e < s for s, e in zip(starts, ends, strict=True)],
            lambda i: f"record ends before it starts ({starts[i]} > {ends[i]})",
        )
        durations = [
            e - s if s is not None and e is not None else 0
            for s, e in zip(starts, ends, strict=True)
        ]
        return [s or 0 for s in starts], durations

    def _convert(
        self,
        name: str,
        kind: pa.DataType,
        plain: str,
        reference: Callable[[str, str], tuple[Any, str]],
        required: bool,
        when: Sequence[bool] | None,
    ) -> list[Any]:
        self._checks += 1
        column = self._column(name)
        if column is None:
            if required and len(self):
                self.flag(0, f"empty value in column {name!r}")
            return [None] * len(self)
        fast = pc.match_substring_regex(column, plain)
        if pc.all(fast).as_py():
            values: list[Any] = pc.cast(column, kind).to_pylist()
        else:
            values = pc.cast(pc.if_else(fast, column, None), kind).to_pylist()
            others = pc.indices_nonzero(pc.invert(fast))
            for i, raw in zip(others.to_pylist(), column.take(others).to_pylist(), strict=True):
                values[i], message = reference(raw, name)
                if message and (when is None or when[i]):
                    self.flag(i, message, new_check=False)
        if required:
            missing = next((i for i, v in enumerate(values) if v is None), None)
            if missing is not None:
                self.flag(missing, f"empty value in column {name!r}", new_check=False)
        return values

    def flag(self, row: int, message: str, *, new_check: bool = True) -> None:
        """Note a bad row; the first in row order wins, then the first check made."""
        if new_check:
            self._checks += 1
        if self._bad is None or (row, self._checks) < self._bad[:2]:
            self._bad = (row, self._checks, message)

    def flag_first(self, bad: Sequence[bool], message: Callable[[int], str]) -> None:
        """Note the first row where `bad` is true, its message made from its index."""
        self._checks += 1
        row = next((i for i, b in enumerate(bad) if b), None)
        if row is not None:
            self.flag(row, message(row), new_check=False)

    def runs(self, kinds: Sequence[Any]) -> Iterator[tuple[Any, int, int]]:
        """``(kind, first, stop)`` for each run of equal kinds among the rows before `cut`:
        an `EventBlock` holds one kind, so a table of mixed kinds becomes several, in order."""
        first = 0
        for i in range(1, self.cut + 1):
            if i == self.cut or kinds[i] != kinds[first]:
                yield kinds[first], first, i
                first = i

    @property
    def cut(self) -> int:
        """How many rows come before the first bad one (all of them when none is bad)."""
        return len(self) if self._bad is None else self._bad[0]

    def error(self) -> CsvError | None:
        """The error the row reader would have raised, or None."""
        if self._bad is None:
            return None
        row, _, message = self._bad
        line = self.table.csv.line_of(self.records[row])
        return CsvError(message, source=self.table.source, location=f"line {line}")
