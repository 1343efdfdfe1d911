"""Independent arithmetic over raw files for the step, rank and collective checks: interval
unions by sort-and-merge, the exclusive split by differences of unions, and nearest-rank
percentiles; no perfdash code (times read by `tests.timeline.raw_chrome`, or plain sqlite3)."""

from __future__ import annotations

import math
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from tests.timeline.raw_chrome import raw_events, read_doc

COMPUTE, COMM, MEMCPY, MEMSET = "compute", "communication", "memcpy", "memset"
ORDER = (COMPUTE, COMM, MEMCPY, MEMSET)


@dataclass(frozen=True)
class Work:
    """One GPU interval with its category."""

    category: str
    start: int
    end: int
    device: int
    name: str = ""
    args: tuple[tuple[str, object], ...] = ()


def union(intervals: list[tuple[int, int]]) -> int:
    """Total length covered by the intervals."""
    total, reach = 0, None
    for s, e in sorted(intervals):
        if reach is None or s > reach:
            total += e - s
            reach = e
        elif e > reach:
            total += e - reach
            reach = e
    return total


def split(work: list[Work], lo: int, hi: int) -> dict[str, int]:
    """The exclusive split of [lo, hi): each category's time not covered by the ones before
    it (compute, communication, memcpy, memset); idle what none covers."""
    clipped = [(w.category, max(w.start, lo), min(w.end, hi)) for w in work
               if w.end > lo and w.start < hi]  # fmt: skip
    out, before = {}, 0
    for i, cat in enumerate(ORDER):
        covered = union([(s, e) for c, s, e in clipped if c in ORDER[: i + 1]])
        out[f"{cat}_ns"] = covered - before
        before = covered
    out["idle_ns"] = hi - lo - before
    return out


def kineto_work(path: Path) -> list[Work]:
    """Kernels, memcpy and memset of a Kineto file; NCCL kernels (by name, or carrying a
    `Collective name`) are communication."""
    out = []
    for e in raw_events(read_doc(path)):
        if e.cat == "kernel":
            comm = e.name.lower().startswith("nccl") or "Collective name" in e.args
            cat = COMM if comm else COMPUTE
        elif e.cat in ("gpu_memcpy", "gpu_memset"):
            cat = MEMCPY if e.cat == "gpu_memcpy" else MEMSET
        else:
            continue
        args = tuple(sorted(e.args.items())) if cat == COMM else ()
        out.append(Work(cat, e.start_ns, e.end_ns, int(e.args.get("device", 0)), e.name, args))
    return out


def kineto_steps(path: Path) -> list[tuple[int, int, int]]:
    """(step number, start, end) of the file's `ProfilerStep#N` CPU annotations."""
    return sorted(
        (int(e.name.split("#")[1]), e.start_ns, e.end_ns)
        for e in raw_events(read_doc(path))
        if e.cat == "user_annotation" and e.name.startswith("ProfilerStep#")
    )


def nsys_work(path: Path) -> list[Work]:
    """Kernels, memcpy and memset of an nsys export, with plain sqlite3."""
    db = sqlite3.connect(path)
    out = [
        Work(COMM if name.lower().startswith("nccl") else COMPUTE, s, e, dev, name)
        for s, e, dev, name in db.execute(
            "SELECT k.start, k.end, k.deviceId, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k "
            "JOIN StringIds s ON s.id = k.shortName"
        )
    ]
    tables = (("CUPTI_ACTIVITY_KIND_MEMCPY", MEMCPY), ("CUPTI_ACTIVITY_KIND_MEMSET", MEMSET))
    for table, cat in tables:
        out += [Work(cat, s, e, dev) for s, e, dev in
                db.execute(f"SELECT start, end, deviceId FROM {table}")]  # fmt: skip
    db.close()
    return out


def median_floor(values: list[int]) -> int:
    v = sorted(values)
    mid = len(v) // 2
    return v[mid] if len(v) % 2 else (v[mid - 1] + v[mid]) // 2


def nearest_rank(values: list[int], pct: int) -> int:
    v = sorted(values)
    return v[math.ceil(pct / 100 * len(v)) - 1]


def kineto_gpu_windows(path: Path) -> dict[int, tuple[int, int]]:
    """Step number -> (first GPU start, last GPU end) of the kernels, copies and memsets
    whose runtime or driver call (same `correlation`) ran inside the step's CPU
    `ProfilerStep#N` range, widened by the step's GPU mirror (`gpu_user_annotation`)."""
    events = raw_events(read_doc(path))
    steps = kineto_steps(path)
    calls: dict[int, int] = {}
    for e in sorted(events, key=lambda e: e.start_ns):
        if e.cat in ("cuda_runtime", "cuda_driver") and "correlation" in e.args:
            calls.setdefault(e.args["correlation"], e.start_ns)
    out: dict[int, tuple[int, int]] = {}

    def widen(n: int, lo: int, hi: int) -> None:
        old = out.get(n)
        out[n] = (lo, hi) if old is None else (min(old[0], lo), max(old[1], hi))

    for e in events:
        if e.cat in ("kernel", "gpu_memcpy", "gpu_memset"):
            t = calls.get(e.args.get("correlation", -1))
            for n, lo, hi in steps:
                if t is not None and lo <= t < hi:
                    widen(n, e.start_ns, e.end_ns)
        elif e.cat == "gpu_user_annotation" and e.name.startswith("ProfilerStep#"):
            widen(int(e.name.split("#")[1]), e.start_ns, e.end_ns)
    return out
