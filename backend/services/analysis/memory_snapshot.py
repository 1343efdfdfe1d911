"""The memory snapshot tab's data, read from the file the ingest wrote into the dataset.

A PyTorch memory snapshot is replayed once at ingest (`ingest.memsnap.build_views`); each
view here is a slice of that JSON for one device, cut to the request's limits, so a request
never unpickles anything.

Public surface: `read_snapshot_summary`, `read_snapshot_segments`,
`read_snapshot_fragmentation`, `read_snapshot_timeline`, `read_snapshot_stacks`,
`read_snapshot_phases`.
"""

import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from sqlmodel import Session

from backend.services.analysis.gpu_work import ready
from backend.services.datasets import memory_snapshot_file
from backend.services.errors import NotFoundError

JSON = dict[str, Any]
At = Literal["peak", "dump"]
STACK_LABEL_FRAMES = 3


@lru_cache(maxsize=16)
def _load(path: Path) -> JSON:
    """Parsed once per process and dataset: a dataset's files never change once written."""
    data: JSON = json.loads(path.read_text(encoding="utf-8"))
    return data


def _device(session: Session, trace_id: str, device: int | None) -> tuple[JSON, JSON]:
    views = _load(memory_snapshot_file(ready(session, trace_id)))
    devices = views["devices"]
    if not devices:
        raise NotFoundError(f"trace {trace_id}'s memory snapshot has no device")
    if device is None:
        return views, devices[0]
    for d in devices:
        if d["device"] == device:
            return views, d
    have = ", ".join(str(d["device"]) for d in devices)
    raise NotFoundError(f"the memory snapshot has no device {device} (it has: {have})")


def read_snapshot_summary(*, session: Session, trace_id: str, device: int | None) -> JSON:
    """Totals at the start of the history, at the peak and at dump time, and what to
    know before reading the views (a history that does not reach back, settings)."""
    views, d = _device(session, trace_id, device)
    keys = ("device", "entries", "first_time_us", "last_time_us", "start", "dump", "peak", "notes")
    return {
        **{k: d[k] for k in keys},
        "devices": [x["device"] for x in views["devices"]],
        "allocator_settings": views.get("allocator_settings", {}),
        "phases": len(d["phases"]),
    }


def read_snapshot_segments(
    *, session: Session, trace_id: str, device: int | None, at: At, limit: int, offset: int
) -> JSON:
    """Segments by address with their allocated blocks and free holes, at the peak or at
    dump time; each allocated block names its innermost frames."""
    _, d = _device(session, trace_id, device)
    segments = d[f"segments_at_{at}"]
    page = segments[offset : offset + limit]
    stacks = d["stacks"]
    items = [{**s, "blocks": [_with_label(b, stacks) for b in s["blocks"]]} for s in page]
    return {"at": at, "count": len(segments), "items": items}


def _with_label(block: JSON, stacks: list[list[str]]) -> JSON:
    if "stack" not in block:
        return block
    return {**block, "frames": stacks[block["stack"]][:STACK_LABEL_FRAMES]}


def read_snapshot_fragmentation(*, session: Session, trace_id: str, device: int | None) -> JSON:
    """Free bytes inside segments by hole size (log2 buckets), at the peak and at dump."""
    _, d = _device(session, trace_id, device)
    return {
        "peak": d["fragmentation"]["peak"],
        "dump": d["fragmentation"]["dump"],
        "reserved_at_dump": d["dump"]["reserved"],
        "free_at_dump": d["dump"]["free_bytes"],
    }


def read_snapshot_timeline(
    *, session: Session, trace_id: str, device: int | None, max_points: int
) -> JSON:
    """Allocated, requested and reserved after each trace entry, at most `max_points`
    (each bucket keeps its highest allocated point, so the peak is always drawn)."""
    _, d = _device(session, trace_id, device)
    series = d["series"]
    n = len(series["entry"])
    step = max(1, -(-n // max_points))
    keep = [
        max(range(lo, min(n, lo + step)), key=lambda i: series["allocated"][i])
        for lo in range(0, n, step)
    ]
    out = {k: [v[i] for i in keep] for k, v in series.items() if isinstance(v, list)}
    return {**out, "bucketed": series["bucketed"] or step > 1, "peak": d["peak"]}


def read_snapshot_stacks(
    *, session: Session, trace_id: str, device: int | None, limit: int
) -> JSON:
    """The allocation stacks holding the most bytes at the peak, frames innermost first."""
    _, d = _device(session, trace_id, device)
    stacks = d["stacks"]
    items = [{**s, "frames": stacks[s["stack"]]} for s in d["top_stacks"][:limit]]
    return {"peak_allocated": d["peak"]["allocated"], "items": items}


def read_snapshot_phases(
    *, session: Session, trace_id: str, device: int | None, limit: int
) -> JSON:
    """Each annotated phase (record_function START/END in the snapshot) with its peak."""
    _, d = _device(session, trace_id, device)
    phases = d["phases"]
    source = d.get("phases_source", "snapshot annotations")
    return {"source": source, "count": len(phases), "items": phases[:limit]}
