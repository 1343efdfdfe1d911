"""rocprof v1 ``results.json`` (Chrome trace written by tblextr/dform, FORMATS.md §4.1).

It looks like a Kineto trace but is not one: ``ts``/``dur`` are often JSON strings of µs, the
``pid`` is a section (COPY, HIP, HSA, GPU<n>, GPU Barriers<n>) named by ``process_name``
metadata events (some tblextr versions write the events' pids as strings of digits and the
metadata's as integers: both are read as the same id; an event whose section cannot be told
is skipped and counted, never guessed), and ``otherData`` holds rocminfo output, from which
only GPU names and sizes are kept. Kernel events carry their exact ``BeginNs``/``EndNs`` in
``args``; those win over the truncated µs values.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from ingest._io import read_all
from ingest.errors import ParseError
from ingest.events import Event, EventKind, ParseReport
from ingest.parsers.rocprof._common import Devices, mark_communication, us_to_ns
from ingest.parsers.rocprof._csv import Row
from ingest.parsers.rocprof.dispatch_csv import DispatchColumns, dispatch_event

# tblextr.py's fixed section pids, used when a file lacks the process_name events
_SECTION_PIDS = {0: "Markers and Ranges", 1: "COPY", 2: "HIP", 3: "HSA", 4: "KFD", 5: "OPS"}
_GPU_BASE_PID = 6
_GPU = re.compile(r"^GPU(\d+)$")
_BARRIERS = re.compile(r"^GPU Barriers(\d+)$")
_AGENT_KEY = re.compile(r"^Agent(\d+)\.([A-Za-z]+(?:\.\(MHz\))?)$")


def load(path: Path, *, max_bytes: int, source: str) -> dict[str, Any]:
    """The parsed document.

    Raises:
        ParseError: invalid JSON or no ``traceEvents`` list.
    """
    data = read_all(path, max_bytes=max_bytes, source=source)
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        raise ParseError(f"invalid JSON: {e.msg}", source=source, offset=e.pos) from e
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise ParseError("not a rocprof results.json: no 'traceEvents' list", source=source)
    return doc


def read_devices(doc: dict[str, Any], devices: Devices) -> None:
    """GPUs from rocminfo's ``AgentN.*`` keys; gpu-id n is the n-th GPU agent."""
    agents: dict[int, dict[str, str]] = {}
    other = doc.get("otherData")
    for key, value in other.items() if isinstance(other, dict) else ():
        m = _AGENT_KEY.match(key)
        if m:
            agents.setdefault(int(m.group(1)), {})[m.group(2)] = str(value)
    gpus = [a for _, a in sorted(agents.items()) if a.get("DeviceType") == "GPU"]
    for gpu_id, agent in enumerate(gpus):
        devices.see(
            gpu_id,
            agent.get("MarketingName", ""),
            vendor="AMD",
            arch=agent.get("Name"),
            compute_units=_leading_int(agent.get("ComputeUnit")),
            max_clock_mhz=_leading_int(agent.get("MaxClockFreq.(MHz)")),
        )


def iter_events(
    doc: dict[str, Any], devices: Devices, report: ParseReport, *, kernels: bool = True
) -> Iterator[Event]:
    """Events of the trace; `kernels=False` leaves GPU dispatches to a results.csv beside it."""
    raw = doc["traceEvents"]
    sections = dict(_SECTION_PIDS)
    for item in raw:
        if isinstance(item, dict) and item.get("ph") == "M" and item.get("name") == "process_name":
            label = (item.get("args") or {}).get("name")
            pid = section_id(item.get("pid"))
            if pid is not None and isinstance(label, str):
                sections[pid] = label
    columns: dict[tuple[str, ...], DispatchColumns] = {}
    for index, item in enumerate(raw):
        if not isinstance(item, dict) or item.get("ph") != "X":
            continue
        try:
            event = _event(item, sections, columns, devices)
        except (TypeError, ValueError, KeyError, ParseError) as e:
            report.skip(f"traceEvents[{index}] ({item.get('name', '?')!s:.60}): {e}")
            continue
        if event is not None and (kernels or event.kind is not EventKind.KERNEL):
            yield event


def _event(
    item: dict[str, Any],
    sections: dict[int, str],
    columns: dict[tuple[str, ...], DispatchColumns],
    devices: Devices,
) -> Event | None:
    args = item.get("args") or {}
    pid = section_id(item.get("pid"))
    if pid is None:
        raise ValueError(f"pid {item.get('pid')!r} names no section, so its kind is unknown")
    section = sections.get(pid, "")
    if "KernelName" in args and "BeginNs" in args:
        header = tuple(args)
        if header not in columns:
            columns[header] = DispatchColumns(list(header), "results.json")
        row = Row([str(v) for v in args.values()], columns[header].index, 0, "results.json")
        return dispatch_event(row, columns[header], devices)
    start, dur = _times(item, args)
    name = str(item.get("name", ""))
    gpu, barrier = _GPU.match(section), _BARRIERS.match(section)
    device = int(gpu.group(1)) if gpu else None
    if not section and pid >= _GPU_BASE_PID:
        device = pid - _GPU_BASE_PID
    if device is not None:
        devices.see(device)
        kind = EventKind.MEMCPY if "copy" in name.lower() else EventKind.KERNEL
        return Event(kind=kind, name=name, start_ns=start, dur_ns=dur, device=device)
    if barrier:
        device = int(barrier.group(1))
        return Event(kind=EventKind.SYNC, name=name, start_ns=start, dur_ns=dur, device=device)
    kind = _section_kind(section, name)
    extra: dict[str, Any] = {"section": section} if section else {}
    mark_communication(name, extra, api=True)
    return Event(
        kind=kind,
        name=name,
        start_ns=start,
        dur_ns=dur,
        pid=_leading_int(args.get("pid")) if kind is not EventKind.MEMCPY else None,
        tid=_leading_int(item.get("tid")),
        correlation=_leading_int(args.get("Index") or args.get("corr_id")),
        args=extra or None,
    )


def _section_kind(section: str, name: str) -> EventKind:
    upper = section.upper()
    if upper == "COPY" or ("copy" in name.lower() and upper in ("OPS", "HIP OPS")):
        return EventKind.MEMCPY
    if upper in ("OPS", "HIP OPS"):
        return EventKind.KERNEL
    if "MARKER" in upper or "RANGE" in upper or "ROCTX" in upper:
        return EventKind.ANNOTATION
    return EventKind.RUNTIME


def _times(item: dict[str, Any], args: dict[str, Any]) -> tuple[int, int]:
    begin, end = _leading_int(args.get("BeginNs")), _leading_int(args.get("EndNs"))
    if begin is not None and end is not None and end >= begin:
        return begin, end - begin
    start, dur = us_to_ns(item["ts"]), us_to_ns(item.get("dur", 0))
    if dur < 0:
        raise ValueError(f"negative duration {item.get('dur')!r}")
    return start, dur


def section_id(value: object) -> int | None:
    """An event's ``pid`` as the integer id of its section, or None when it is none.

    >>> section_id(6), section_id("6"), section_id(" 7 "), section_id("GPU0"), section_id(True)
    (6, 6, 7, None, None)
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _leading_int(value: object) -> int | None:
    """The integer at the start of a rocminfo-style value (``"32(0x20)"`` -> 32).

    >>> _leading_int("32(0x20)"), _leading_int(7), _leading_int("x"), _leading_int(None)
    (32, 7, None, None)
    """
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    m = re.match(r"\s*(-?\d+)", str(value))
    return int(m.group(1)) if m else None
