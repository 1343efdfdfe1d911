"""The Metal System Trace tables perfdash reads, their columns, and typed reads of a row.

Columns are found by mnemonic, never by position: Xcode versions add and reorder columns.
A table must have the columns listed in `REQUIRED` with the engineering type given there;
any other column is ignored. Times are `start-time`/`duration` cells: integer nanoseconds
since the start of the recording (`mach-absolute-time` columns are ticks, never read).
"""

from __future__ import annotations

from ingest.errors import ParseError
from ingest.parsers.xctrace._xml import Cell, Row, Table

GPU = "metal-gpu-intervals"
SUBMISSIONS = "metal-application-command-buffer-submissions"
ENCODERS = "metal-application-encoders-list"
DRIVER = "metal-driver-intervals"
DRIVER_EVENTS = "metal-driver-event-intervals"
_TIMES = {"start": "start-time", "duration": "duration"}
_THREAD = {"thread": "thread"}
REQUIRED: dict[str, dict[str, str]] = {
    GPU: {
        **_TIMES,
        "channel-name": "gpu-channel-name",
        "event-label": "formatted-label",
        "process": "process",
        "cmdbuffer-id": "metal-command-buffer-id",
    },
    SUBMISSIONS: {**_TIMES, **_THREAD, "cmdbuffer-id": "metal-command-buffer-id"},
    ENCODERS: {
        **_TIMES,
        **_THREAD,
        "cmdbuffer-id": "metal-command-buffer-id",
        "encoder-id": "metal-command-buffer-id",
    },
    DRIVER: {**_TIMES, **_THREAD, "event-label": "formatted-label"},
    DRIVER_EVENTS: {**_TIMES, **_THREAD, "event-label": "formatted-label"},
}
ACCEPTED = tuple(REQUIRED)
# Optional columns read when present, with the types they may then have (Xcode uses
# different types for one mnemonic in different tables; empty: any type, read as a label).
OPTIONAL: dict[str, tuple[str, ...]] = {
    "gpu": ("metal-device-name",),
    "encoder-id": ("metal-command-buffer-id", "uint64"),
    "frame-number": ("gpu-frame-number", "uint32"),
    "start-latency": ("duration",),
    "gpu-submission-id": ("uint64", "metal-command-buffer-id"),
    "bytes": ("size-in-bytes",),
    "event-label": ("narrative", "formatted-label"),
    "num-encoders": ("uint32",),
    "cmdbuffer-label": ("metal-object-label",),
    "encoder-label": ("metal-object-label",),
    "gpu-driver-name": ("gpu-driver-name",),
    "event-type": (),
    "process": ("process",),
}
MAX_NS = 2**62


class RowView:
    """A row's cells by mnemonic, with typed reads that raise located errors."""

    def __init__(self, row: Row, source: str, index: dict[str, int]) -> None:
        self.row, self.source, self.index = row, source, index

    def error(self, message: str) -> ParseError:
        where = f"{self.row.table.schema} row {self.row.index + 1}, line {self.row.line}"
        return ParseError(message, source=self.source, location=where)

    def cell(self, mnemonic: str) -> Cell | None:
        """The cell, or None when the column is absent or the cell is a sentinel."""
        i = self.index.get(mnemonic)
        if i is None:
            return None
        cell = self.row.cells[i]
        return None if cell.tag == "sentinel" else cell

    def need(self, mnemonic: str) -> Cell:
        cell = self.cell(mnemonic)
        if cell is None:
            raise self.error(f"{mnemonic!r} is empty (<sentinel/>)")
        return cell

    def integer(self, mnemonic: str, cell: Cell | None = None) -> int:
        cell = cell or self.need(mnemonic)
        # An id cell may carry its value only as `fmt` ("0x154d189050"); times never do.
        text = cell.text or (cell.fmt if cell.tag == "metal-command-buffer-id" else "")
        try:
            value = int(text, 16) if text.lower().startswith("0x") else int(text)
        except ValueError:
            raise self.error(f"{mnemonic!r} is {text!r}, not an integer") from None
        if not 0 <= value < 2**64:
            raise self.error(f"{mnemonic!r} is {value}, outside 0..2**64")
        return value

    def time(self, mnemonic: str) -> int:
        cell = self.need(mnemonic)
        if cell.text.startswith("-"):
            raise self.error(f"{mnemonic!r} is negative ({cell.text} ns)")
        value = self.integer(mnemonic, cell)
        if value >= MAX_NS:
            raise self.error(f"{mnemonic!r} is {value} ns, past any recording")
        return value

    def label(self, mnemonic: str) -> str:
        cell = self.cell(mnemonic)
        return "" if cell is None else display(cell)


def display(cell: Cell) -> str:
    """What Instruments shows for a cell: a nested ``<string>``, else `fmt`, else text."""
    inner = cell.child("string")
    if inner is not None:
        return inner.text or inner.fmt
    return cell.fmt or cell.text


def check_columns(table: Table, source: str) -> dict[str, int]:
    """Column positions by mnemonic, after checking the required ones and their types.

    Raises:
        ParseError: a required column is missing, or a column has an unexpected type.
    """
    index = {c.mnemonic: i for i, c in enumerate(table.columns)}
    types = {c.mnemonic: c.kind for c in table.columns}
    where = f"schema {table.schema}"
    for mnemonic, kind in REQUIRED[table.schema].items():
        if mnemonic not in index:
            have = ", ".join(index)
            raise ParseError(
                f"no {mnemonic!r} column ({kind}); the table has: {have}",
                source=source,
                location=where,
            )
        if types[mnemonic] != kind:
            raise ParseError(
                f"column {mnemonic!r} is {types[mnemonic]!r}, expected {kind!r}",
                source=source,
                location=where,
            )
    for mnemonic, kinds in OPTIONAL.items():
        optional = mnemonic in index and mnemonic not in REQUIRED[table.schema]
        if optional and kinds and types[mnemonic] not in kinds:
            raise ParseError(
                f"column {mnemonic!r} is {types[mnemonic]!r}, expected "
                + " or ".join(repr(k) for k in kinds),
                source=source,
                location=where,
            )
    return index
