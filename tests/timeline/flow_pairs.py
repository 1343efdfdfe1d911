"""Independent readers of CPU launch → GPU work flows, for the export tests.

`chrome_flows` reads a Chrome trace (a torch.profiler source or perfdash's export) as raw
JSON; `nsys_flows` reads an Nsight Systems SQLite export with its own SQL. Neither uses
perfdash code. Times are absolute integer ns (Chrome `ts` are µs after
`baseTimeNanoseconds`, read as `Decimal` so nothing is rounded), so a source and its export
compare exactly.
"""

from __future__ import annotations

import gzip
import json
import sqlite3
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

Point = tuple[int, int, int]  # pid, tid, absolute ns
Pair = tuple[Point, Point]  # the launch (s), the GPU event (f)
GPU_CATEGORIES = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})


def chrome_doc(raw: bytes) -> dict[str, Any]:
    """A Chrome trace (gzip or not), every float as `Decimal`."""
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    doc: dict[str, Any] = json.loads(raw, parse_float=Decimal)
    return doc


def point(event: dict[str, Any], base_ns: int) -> Point:
    """Where an event sits: its pid, tid and absolute start in ns."""
    ns = Decimal(base_ns) + Decimal(event["ts"]) * 1000
    assert ns == ns.to_integral_value(), event
    return int(event["pid"]), int(event["tid"]), int(ns)


@dataclass
class Flows:
    """A trace's flow events of one category by id: starts (`s`) and ends (`f`)."""

    starts: dict[int, list[Point]] = field(default_factory=lambda: defaultdict(list))
    ends: dict[int, list[Point]] = field(default_factory=lambda: defaultdict(list))

    def pairs(self) -> Counter[Pair]:
        """Each end with its id's start, for ids with exactly one start and some end."""
        return Counter(
            (self.starts[i][0], end)
            for i, ends in self.ends.items()
            if len(self.starts.get(i, ())) == 1
            for end in ends
        )


def chrome_flows(doc: dict[str, Any], cat: str = "ac2g") -> Flows:
    """The flows of category `cat` (Kineto's `ac2g` launch → GPU links, or its `fwdbwd`
    forward → backward ones) of a Chrome trace document (from `chrome_doc`)."""
    base = int(doc.get("baseTimeNanoseconds", 0))
    flows = Flows()
    for event in doc["traceEvents"]:
        if event.get("cat") == cat and event.get("ph") in ("s", "f"):
            into = flows.starts if event["ph"] == "s" else flows.ends
            into[int(event["id"])].append(point(event, base))
    return flows


def chrome_points(doc: dict[str, Any], categories: frozenset[str]) -> Counter[Point]:
    """Where the complete (`X`) events of the given categories start."""
    base = int(doc.get("baseTimeNanoseconds", 0))
    return Counter(
        point(e, base)
        for e in doc["traceEvents"]
        if e.get("ph") == "X" and e.get("cat") in categories
    )


_NSYS_PAIRS = """
WITH work AS (
    SELECT start, deviceId AS device, streamId AS stream, correlationId AS corr,
        (globalPid >> 24) & 16777215 AS pid FROM CUPTI_ACTIVITY_KIND_KERNEL
    UNION ALL
    SELECT start, deviceId, streamId, correlationId, (globalPid >> 24) & 16777215
    FROM CUPTI_ACTIVITY_KIND_MEMCPY
    UNION ALL
    SELECT start, deviceId, streamId, correlationId, (globalPid >> 24) & 16777215
    FROM CUPTI_ACTIVITY_KIND_MEMSET
), gpu AS (
    SELECT *, row_number() OVER () AS n FROM work
), calls AS (
    SELECT start, (globalTid >> 24) & 16777215 AS pid, globalTid & 16777215 AS tid,
        correlationId AS corr
    FROM CUPTI_ACTIVITY_KIND_RUNTIME
)
SELECT c.pid, c.tid, max(c.start), g.device, g.stream, g.start
FROM gpu g JOIN calls c ON c.corr = g.corr AND c.pid = g.pid AND c.start <= g.start
GROUP BY g.n
"""


def nsys_pairs(path: Path) -> Counter[Pair]:
    """Each kernel, memcpy and memset of an nsys export with the latest runtime or driver
    call of its process and correlation id at or before it (SQLite's `max()` takes that
    call's other columns from the same row). The serialized GlobalId layout (pid in bits
    24-47, tid in 0-23) is Nsight Systems' documented one."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        rows = conn.execute(_NSYS_PAIRS).fetchall()
    return Counter(((pid, tid, t0), (dev, stream, t1)) for pid, tid, t0, dev, stream, t1 in rows)
