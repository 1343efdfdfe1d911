"""The Metal System Trace tables perfdash reads, and how a row becomes an `Event`.

Columns are found by mnemonic, never by position: Xcode versions add and reorder columns.
A table must have the columns listed in `REQUIRED` with the engineering type given there;
any other column is ignored. Times are `start-time`/`duration` cells: integer nanoseconds
since the start of the recording (`mach-absolute-time` columns are ticks, never read).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ingest.errors import ParseError
from ingest.events import Event, EventKind
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
# Stable lane numbers for the channels Metal System Trace draws; others follow from 10.
CHANNEL_LANES = {"Vertex": 1, "Fragment": 2, "Compute": 3, "Blit": 4}
# "<label>   (python (99926)) 0x4e189059" or "<label> ( python3.11 (42) )  0xabc": both
# spacings are seen in public exports; the hex tail is the GPU submission.
_PROCESS_SUFFIX = re.compile(
    r"^(?P<label>.*?)\s+\(\s*(?P<process>[^()]*\(\d+\))\s*\)(?:\s+0x[0-9a-fA-F]+)?\s*$"
)
_COMMITTED = re.compile(r'^Committed "(?P<label>.*)" with (?P<n>\d+) encoders?$')
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


class Mapper:
    """Turns rows of every accepted table into events, sharing what tables have in common:
    command-buffer ids (the correlation), GPU channel lanes and the device name."""

    def __init__(self) -> None:
        self.command_buffers: dict[int, int] = {}
        self.lanes: dict[str, int] = dict(CHANNEL_LANES)
        self.lanes_used: dict[str, int] = {}
        self.gpu_name = ""
        self._handlers: dict[str, Callable[[RowView], Event]] = {
            GPU: self._gpu,
            SUBMISSIONS: self._submission,
            ENCODERS: self._encoder,
            DRIVER: self._driver,
            DRIVER_EVENTS: self._driver,
        }

    def event(self, view: RowView) -> Event:
        return self._handlers[view.row.table.schema](view)

    def correlation(self, view: RowView) -> tuple[int, str]:
        raw = view.integer("cmdbuffer-id")
        return self.command_buffers.setdefault(raw, len(self.command_buffers) + 1), hex(raw)

    def lane(self, channel: str) -> int:
        if channel not in self.lanes:
            self.lanes[channel] = max(9, *self.lanes.values()) + 1
        self.lanes_used[channel] = self.lanes[channel]
        return self.lanes[channel]

    def _gpu(self, v: RowView) -> Event:
        channel = v.label("channel-name")
        if not channel:
            raise v.error("'channel-name' is empty")
        corr, raw = self.correlation(v)
        process = v.label("process")
        name = _strip_process(v.label("event-label")) or f"{channel} encoder"
        args: dict[str, Any] = {"channel": channel, "command_buffer": raw, "process": process}
        _optional(v, args)
        if not self.gpu_name:
            self.gpu_name = v.label("gpu")
        blit = channel.startswith("Blit")
        if blit and v.cell("bytes") is not None:
            args["bytes"] = v.integer("bytes")
        return Event(
            kind=EventKind.MEMCPY if blit else EventKind.KERNEL,
            name=name,
            start_ns=v.time("start"),
            dur_ns=v.time("duration"),
            device=0,
            stream=self.lane(channel),
            correlation=corr,
            args=args,
        )

    def _submission(self, v: RowView) -> Event:
        corr, raw = self.correlation(v)
        pid, tid, thread = _thread(v)
        args: dict[str, Any] = {"command_buffer": raw, "thread": thread}
        note = v.label("event-label")
        if match := _COMMITTED.match(note):
            args["label"], args["encoders"] = match["label"], int(match["n"])
        elif note:
            args["note"] = note
        if v.cell("num-encoders") is not None:
            args["encoders"] = v.integer("num-encoders")
        return Event(
            kind=EventKind.RUNTIME,
            name="MTLCommandBuffer commit",
            start_ns=v.time("start"),
            dur_ns=v.time("duration"),
            pid=pid,
            tid=tid,
            correlation=corr,
            args=args,
        )

    def _encoder(self, v: RowView) -> Event:
        corr, raw = self.correlation(v)
        pid, tid, thread = _thread(v)
        encoder = v.label("encoder-label") or "encoder"
        args: dict[str, Any] = {
            "command_buffer": raw,
            "encoder": hex(v.integer("encoder-id")),
            "command_buffer_label": v.label("cmdbuffer-label"),
            "thread": thread,
        }
        return Event(
            kind=EventKind.CPU_OP,
            name=f"encode {encoder}",
            start_ns=v.time("start"),
            dur_ns=v.time("duration"),
            pid=pid,
            tid=tid,
            correlation=corr,
            args=args,
        )

    def _driver(self, v: RowView) -> Event:
        pid, tid, thread = _thread(v)
        what = v.label("event-type") or _strip_process(v.label("event-label"))
        driver = v.label("gpu-driver-name") or "Metal driver"
        return Event(
            kind=EventKind.RUNTIME,
            name=f"{driver}: {what}" if what else driver,
            start_ns=v.time("start"),
            dur_ns=v.time("duration"),
            pid=pid,
            tid=tid,
            args={"label": v.label("event-label"), "thread": thread},
        )


def _strip_process(label: str) -> str:
    """``Command Buffer 0:Compute Command 0   (python (99926)) 0x4e18…`` → the label part.

    >>> _strip_process("Scene:GBuffer ( app (42) )  0xabc"), _strip_process("Frame (2)")
    ('Scene:GBuffer', 'Frame (2)')
    """
    match = _PROCESS_SUFFIX.match(label)
    return match["label"] if match else label.strip()


def _thread(v: RowView) -> tuple[int, int, str]:
    """pid, tid and display name of the row's ``<thread>`` (``<tid>``, ``<process><pid>``)."""
    thread = v.need("thread")
    tid_cell, process = thread.child("tid"), thread.child("process")
    pid_cell = process.child("pid") if process is not None else None
    if tid_cell is None or pid_cell is None:
        raise v.error("'thread' has no <tid> or no <process><pid>")
    return v.integer("thread pid", pid_cell), v.integer("thread tid", tid_cell), thread.fmt


def _optional(v: RowView, args: dict[str, Any]) -> None:
    if v.cell("encoder-id") is not None:
        args["encoder"] = hex(v.integer("encoder-id"))
    if (frame := v.cell("frame-number")) is not None:
        args["frame"] = v.integer("frame-number", frame)
    if v.cell("start-latency") is not None:
        args["cpu_to_gpu_latency_ns"] = v.time("start-latency")
    if (sub := v.cell("gpu-submission-id")) is not None:
        args["gpu_submission"] = v.integer("gpu-submission-id", sub)
