"""Event constructors for summary tests: small traces whose answers are computed by hand."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ingest.events import Event, EventKind, TraceFormat, TraceHeader
from ingest.summary import SummaryBuilder


def kernel(
    name: str,
    start: int,
    dur: int,
    *,
    stream: int = 7,
    device: int = 0,
    corr: int | None = None,
    args: dict[str, Any] | None = None,
    rank: int | None = None,
) -> Event:
    return Event(
        EventKind.KERNEL, name, start, dur, device=device, stream=stream, correlation=corr,
        args=args, rank=rank,
    )  # fmt: skip


def copy(name: str, start: int, dur: int, *, nbytes: int = 0, stream: int = 7) -> Event:
    kind = EventKind.MEMSET if name.startswith("Memset") else EventKind.MEMCPY
    return Event(kind, name, start, dur, device=0, stream=stream, args={"bytes": nbytes})


def op(name: str, start: int, dur: int, *, tid: int = 1) -> Event:
    return Event(EventKind.CPU_OP, name, start, dur, pid=1, tid=tid)


def runtime(name: str, start: int, dur: int, *, corr: int | None = None, tid: int = 1) -> Event:
    return Event(EventKind.RUNTIME, name, start, dur, pid=1, tid=tid, correlation=corr)


def annotation(name: str, start: int, dur: int, *, gpu: bool = False) -> Event:
    if gpu:
        return Event(EventKind.GPU_ANNOTATION, name, start, dur, device=0, stream=7)
    return Event(EventKind.ANNOTATION, name, start, dur, pid=1, tid=1)


def memory(ts: int, allocated: int, reserved: int, *, device: int = 0) -> Event:
    args = {"Device Type": 1, "Device Id": device, "Total Allocated": allocated}
    args["Total Reserved"] = reserved
    return Event(EventKind.MEMORY, "[memory]", ts, 0, pid=1, tid=1, args=args)


def summarize(events: Iterable[Event]) -> tuple[dict[str, Any], SummaryBuilder]:
    """The summary of `events`, and the builder (for its stats and kernel groups)."""
    builder = SummaryBuilder()
    for event in events:
        builder.add(event)
    return builder.finish(TraceHeader(format=TraceFormat.KINETO)), builder
