"""Allocated and reserved GPU memory over time, per device, from `[memory]` events.

The caching allocator reports its totals after every allocation and free (`Total
Allocated`, `Total Reserved`, FORMATS.md §1.9); 2021 traces only carry the signed `Bytes`
of each event, so there the allocated total is their running sum and reserved is unknown.
Fragmentation is reserved minus allocated, as a share of reserved: memory the allocator
holds but no tensor uses. Long series are thinned to at most `max_points` per device by
keeping each bucket's highest sample, so peaks survive.

Public surface: `compute_memory`.
"""

from collections import defaultdict
from typing import Any

import orjson
from sqlmodel import Session

from backend.models import Trace
from backend.models.analyses import MemoryPublic, MemorySeries
from backend.services.analysis.stored import read_events
from backend.services.traces import get_trace

CPU_DEVICE_TYPE = 0
MAX_POINTS = 2000

Sample = tuple[int, int, int | None]  # (t_ns, allocated, reserved)


def _device(args: dict[str, Any]) -> int | None:
    """The GPU ordinal of a memory event, or None for host memory."""
    if args.get("Device Type") == CPU_DEVICE_TYPE:
        return None
    dev = args.get("Device Id")
    return dev if isinstance(dev, int) and dev >= 0 else None


def _samples(rows: list[tuple[int, dict[str, Any] | None]]) -> dict[int, list[Sample]]:
    series: dict[int, list[Sample]] = defaultdict(list)
    running: dict[int, int] = defaultdict(int)
    for t, args in rows:
        if not args:
            continue
        dev = _device(args)
        if dev is None:
            continue
        allocated, reserved = args.get("Total Allocated"), args.get("Total Reserved")
        if not isinstance(allocated, int):
            running[dev] += int(args.get("Bytes") or 0)
            allocated = running[dev]
        series[dev].append((t, allocated, reserved if isinstance(reserved, int) else None))
    return series


def _thin(samples: list[Sample], max_points: int) -> list[Sample]:
    """At most `max_points`, keeping the sample with the most allocated memory per bucket."""
    if len(samples) <= max_points:
        return samples
    step = len(samples) / max_points
    out = []
    for i in range(max_points):
        bucket = samples[int(i * step) : int((i + 1) * step)]
        if bucket:
            out.append(max(bucket, key=lambda s: (s[1], s[2] or 0)))
    return out


def _fragmentation(allocated: int, reserved: int | None) -> float | None:
    if not reserved:
        return None
    return round(100.0 * max(reserved - allocated, 0) / reserved, 3)


def _series(device: int, samples: list[Sample], max_points: int) -> MemorySeries:
    peak_a = max(samples, key=lambda s: s[1])
    with_reserved = [s for s in samples if s[2] is not None]
    peak_r = max(with_reserved, key=lambda s: s[2] or 0) if with_reserved else None
    frags = [f for s in with_reserved if (f := _fragmentation(s[1], s[2])) is not None]
    shown = _thin(samples, max_points)
    return MemorySeries(
        device=device,
        t_ns=[s[0] for s in shown],
        allocated=[s[1] for s in shown],
        reserved=[s[2] for s in shown],
        peak_allocated=peak_a[1],
        peak_allocated_t_ns=peak_a[0],
        peak_reserved=peak_r[2] if peak_r else None,
        peak_reserved_t_ns=peak_r[0] if peak_r else None,
        fragmentation_at_peak_pct=_fragmentation(peak_a[1], peak_a[2]),
        fragmentation_max_pct=max(frags) if frags else None,
        samples=len(samples),
    )


def _from_summary(memory: list[Any], max_points: int) -> list[MemorySeries]:
    """The summary's already-thinned series (ingest.summary.DeviceMemory), with fragmentation."""
    out = []
    for m in memory:
        s = m["series"]
        samples = list(zip(s["ts_ns"], s["allocated_bytes"], s["reserved_bytes"], strict=True))
        if samples:
            series = _series(int(m["device"]), samples, max_points)
            series.rank, series.samples = m.get("rank"), int(m.get("samples", len(samples)))
            out.append(series)
    return out


def _from_events(trace: Trace, max_points: int) -> list[MemorySeries]:
    sql = "SELECT start_ns, args FROM {events} WHERE kind = 'memory' ORDER BY start_ns, id"
    rows = read_events(trace, sql)
    series = _samples([(t, orjson.loads(a) if a is not None else None) for t, a in rows])
    return [_series(d, s, max_points) for d, s in sorted(series.items())]


def compute_memory(
    *, session: Session, trace_id: str, max_points: int = MAX_POINTS
) -> MemoryPublic:
    """Per-device memory series with peaks and fragmentation.

    Reads the series the ingest summary stored; traces ingested before the summary had
    them are read from their `[memory]` events instead.

    Raises:
        NotFoundError: no such trace.
    """
    trace = get_trace(session=session, trace_id=trace_id)
    stored = (trace.summary or {}).get("memory")
    if isinstance(stored, list) and "version" in (trace.summary or {}):
        devices, source = _from_summary(stored, max_points), "summary"
    else:
        devices, source = _from_events(trace, max_points), "events"
    note = "" if devices else (
        "This trace has no GPU memory events: profile with profile_memory=True to record "
        "the allocator's activity."
    )  # fmt: skip
    return MemoryPublic(
        trace_id=trace_id, start_ns=trace.start_ns, devices=devices, source=source, note=note
    )
