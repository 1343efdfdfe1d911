"""Nsight Compute CSV (``ncu --csv``): ``--page raw``, ``--page details`` and
``--print-summary per-kernel`` (FORMATS.md §3), or an ``.ncu-rep`` through ``ncu --import``.

Lines before the CSV header (``==PROF==``, ``==WARNING==``, the application's own output) are
skipped. Values may carry thousands separators of either locale and units that change from
row to row; everything is converted to base units (`_ncu_metrics`). Unknown columns are
ignored and listed once in the report's warnings.

Each kernel launch becomes one kernel event. ncu replays launches one at a time and records
no timestamps, so ``start_ns`` is the launch's place on a serialised timeline (the sum of
the durations before it), and ``TraceHeader.metadata["timeline"]`` is False so that nothing
timeline-derived (utilisation, idle time, overlap) is computed from it. A per-kernel summary
row becomes one event whose numbers are the averages over its ``invocations`` (also in args,
with ``duration_min_ns`` and ``duration_max_ns``); the kernel stats count it as that many
launches.

Event args (the roofline view of the trace pages reads them): ``duration_ns``,
``flops_fp64``, ``flops_fp32``, ``flops_fp16``, ``flops_tensor`` (FLOP per launch),
``dram_bytes``, ``l1_bytes``, ``l2_bytes`` (bytes per launch), ``achieved_occupancy``,
``sm_throughput_pct``, ``mem_throughput_pct`` (%), plus ``grid``, ``block``, ``registers per
thread``, ``shared memory``, ``static shared memory``, ``dynamic shared memory`` and
``ncu id``; and for the sections view ``ncu_metrics`` and ``ncu_sections``
(`_ncu_sections`). A key is absent when the CSV lacks the metrics it needs.

`Device.properties` keys: ``peak_flops_fp64``, ``peak_flops_fp32``, ``peak_flops_fp16``,
``peak_flops_tensor`` (dense bf16/fp16 tensor), ``peak_dram_bytes_per_s``, as ncu's roofline
charts compute them (peak per cycle x the clock during the launch; the highest over the
file's launches), plus ``compute_capability`` and ``sm_count``; on pages without ncu's
peak metrics they are derived (`derived_peaks`) and ``peak_source`` says so.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ingest.errors import ParseError
from ingest.events import Device, Event, EventKind, ParseReport, TraceFormat, TraceHeader
from ingest.parsers import _ncu_csv as table
from ingest.parsers._ncu_metrics import derived_peaks, device_peaks, launch_args
from ingest.parsers._ncu_sections import kept_metrics
from ingest.tools import (
    ExternalTools,
    import_ncu_csv,
    is_ncu_report,
    readable_file,
    remove_workdir,
)

_DIMS = re.compile(r"-?\d+")
DERIVED_SOURCE = (
    "peaks derived from ncu's SM clock, SM count and DRAM throughput share (details/summary page)"
)


_PREAMBLE = ("==PROF==", "==WARNING==", "==ERROR==")
_HEADERS = ('"ID","Process ID"', '"Process ID","Process Name","Host Name","Kernel Name"')


def sniff(path: Path, head: bytes, source: str = "") -> TraceFormat | None:
    """`ingest.detect`'s hook: an ``.ncu-rep`` (magic or name) or ncu's CSV, else None."""
    if is_ncu_report(head, source or path.name):
        return TraceFormat.NCU_CSV
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n").decode("utf-8", errors="replace")
    if text.startswith(("{", "[")):
        return None  # JSON, whatever strings it holds
    if text.startswith(_PREAMBLE) or any(h in text for h in _HEADERS):
        return TraceFormat.NCU_CSV
    return None


def parse(
    path: Path,
    report: ParseReport,
    *,
    max_bytes: int,
    source: str,
    tools: ExternalTools | None = None,
) -> tuple[TraceHeader, Iterator[Event]]:
    """Read an Nsight Compute CSV (or an ``.ncu-rep``, through ``ncu --import``).

    Args:
        path: the CSV file or report.
        report: receives skipped-row counts and warnings (unknown columns).
        max_bytes: largest CSV accepted.
        source: the file name shown in errors.
        tools: where the worker's ``ncu`` is, for ``.ncu-rep`` uploads.

    Returns:
        The trace header (devices fill in as the events are read) and the events.

    Raises:
        UnsupportedFormatError: an ``.ncu-rep`` with no ``ncu`` configured.
        ParseError: an empty file, no CSV header, or an unreadable CSV.
    """
    path, workdir = readable_file(path, source, tools, is_ncu_report, import_ncu_csv)
    try:
        if path.stat().st_size > max_bytes:
            raise ParseError(f"file is larger than the {max_bytes}-byte limit", source=source)
        opened = table.open_csv(path, source, report)
    except BaseException:
        remove_workdir(workdir)
        raise
    # The serial "timeline" is made up: no time split or gap may be derived from it.
    header = TraceHeader(
        format=TraceFormat.NCU_CSV, metadata={"ncu_page": opened.page, "timeline": False}
    )
    return header, _events(opened, header, report, workdir)


def _events(
    opened: table.OpenedCsv, header: TraceHeader, report: ParseReport, workdir: Path | None
) -> Iterator[Event]:
    devices: dict[int, Device] = {}
    clock = 0
    try:
        for launch in opened.launches:
            event = _to_event(launch, clock, report)
            if event is None:
                continue
            clock += event.dur_ns
            _note_device(devices, launch)
            header.devices = [devices[i] for i in sorted(devices)]
            yield event
    finally:
        opened.close()
        remove_workdir(workdir)


def _to_event(launch: table.Launch, clock: int, report: ParseReport) -> Event | None:
    ids, m = launch.ids, launch.metrics
    args: dict[str, Any] = dict(launch_args(m))
    dur = args.get("duration_ns")
    if dur is None:
        report.skip(f"{launch.where}: kernel {ids.get('Kernel Name', '?')!r} has no duration")
        return None
    grid = _dims(ids.get("Grid Size", ""), m, "grid")
    block = _dims(ids.get("Block Size", ""), m, "block")
    static = m.get("launch__shared_mem_per_block_static")
    dynamic = m.get("launch__shared_mem_per_block_dynamic")
    args.update(
        {
            "ncu id": _int(ids.get("ID", "")),
            "grid": grid,
            "block": block,
            "registers per thread": _opt_int(m.get("launch__registers_per_thread")),
            "static shared memory": _opt_int(static),
            "dynamic shared memory": _opt_int(dynamic),
        }
    )
    if static is not None or dynamic is not None:
        args["shared memory"] = int((static or 0) + (dynamic or 0))
    args["ncu_metrics"] = kept_metrics(m) or None
    args.update(launch.extra)
    return Event(
        kind=EventKind.KERNEL,
        name=ids.get("Kernel Name", ""),
        start_ns=clock,
        dur_ns=round(dur),
        device=_int(ids.get("Device", "")),
        stream=_int(ids.get("Stream", "")),
        pid=_int(ids.get("Process ID", "")),
        args={k: v for k, v in args.items() if v is not None},
    )


def _note_device(devices: dict[int, Device], launch: table.Launch) -> None:
    """Keep the device's name and, per peak, the highest value ncu reported.

    The details and summary pages carry neither the device's name nor ncu's peak metrics:
    the name is then made of what they do carry (compute capability, SM count), and the
    peaks are derived from the clocks and throughput shares (`derived_peaks`)."""
    index = _int(launch.ids.get("Device", "")) or 0
    device = devices.setdefault(index, Device(index=index))
    cc = launch.ids.get("CC", "")
    sm_count = launch.metrics.get("device__attribute_multiprocessor_count")
    name = launch.text.get("device__attribute_display_name")
    if name and not device.name:
        device.name = name
    props = device.properties
    if cc:
        props["compute_capability"] = cc
    if sm_count is not None:
        props["sm_count"] = int(sm_count)
    peaks = device_peaks(launch.metrics)
    if not peaks and (peaks := derived_peaks(launch.metrics, cc)):
        props["peak_source"] = DERIVED_SOURCE
    for key, value in peaks.items():
        props[key] = max(value, props.get(key, 0.0))
    if not device.name and not name and cc:
        sms = f", {int(sm_count)} SMs" if sm_count else ""
        device.name = f"NVIDIA GPU (compute capability {cc}{sms})"


def _dims(text: str, m: table.Metrics, kind: str) -> list[int] | None:
    """``"(2, 66, 1)"`` -> ``[2, 66, 1]``, else the ``launch__<kind>_dim_*`` metrics.

    >>> _dims("(2, 66, 1)", {}, "grid"), _dims("", {"launch__grid_dim_x": 4.0}, "grid")
    ([2, 66, 1], [4, 1, 1])
    """
    parts = [int(p) for p in _DIMS.findall(text)]
    if len(parts) == 3:
        return parts
    x = m.get(f"launch__{kind}_dim_x")
    if x is None:
        return None
    return [int(x), int(m.get(f"launch__{kind}_dim_y", 1)), int(m.get(f"launch__{kind}_dim_z", 1))]


def _int(text: str) -> int | None:
    try:
        return int(text.replace(",", "").strip())
    except ValueError:
        return None


def _opt_int(value: float | None) -> int | None:
    return None if value is None else int(value)
