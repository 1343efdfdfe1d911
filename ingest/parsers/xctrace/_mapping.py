"""How a row of each accepted table becomes an `Event` (ingest/parsers/xctrace/_tables.py
says which tables and columns). Tables share command-buffer ids (the correlation), the GPU
channel lanes and the device name, so one `Mapper` serves a whole trace."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ingest.events import Event, EventKind
from ingest.parsers.xctrace._tables import (
    DRIVER,
    DRIVER_EVENTS,
    ENCODERS,
    GPU,
    SUBMISSIONS,
    RowView,
)

# Stable lane numbers for the channels Metal System Trace draws; others follow from 10.
CHANNEL_LANES = {"Vertex": 1, "Fragment": 2, "Compute": 3, "Blit": 4}
# "<label>   (python (99926)) 0x4e189059" or "<label> ( python3.11 (42) )  0xabc": both
# spacings are seen in public exports; the hex tail is the GPU submission.
_PROCESS_SUFFIX = re.compile(
    r"^(?P<label>.*?)\s+\(\s*(?P<process>[^()]*\(\d+\))\s*\)(?:\s+0x[0-9a-fA-F]+)?\s*$"
)
_COMMITTED = re.compile(r'^Committed "(?P<label>.*)" with (?P<n>\d+) encoders?$')


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
