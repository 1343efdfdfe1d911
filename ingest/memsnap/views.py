"""What the memory snapshot tab shows, computed once at ingest as compact JSON per device.

- the segment/block map at the allocated peak and at dump time (allocated blocks and the
  free holes between them, per segment);
- the fragmentation histogram: free bytes inside segments by hole size (log2 buckets);
- allocated, requested and reserved after each trace entry (bucketed to `MAX_POINTS`,
  keeping each bucket's highest allocated point so the peak survives);
- the top allocation stacks live at the peak, by bytes;
- the peak within each annotated phase (record_function START/END marks).

Public surface: `build_views`, `MAX_POINTS`, `TOP_STACKS`, `MAX_VIEWS_BYTES`, `VIEWS_VERSION`.
"""

from __future__ import annotations

import bisect
import json
from collections import defaultdict
from typing import Any

from ingest.errors import ParseError
from ingest.memsnap.replay import Replay, State, replay
from ingest.memsnap.snapshot import Annotation, Frames, Snapshot

VIEWS_VERSION = 1
MAX_POINTS = 4000
TOP_STACKS = 20
MAX_FRAMES = 16
MAX_PHASES = 2000
# Every viewer of the trace downloads the views whole: a snapshot whose views would be
# larger is refused (a real one's are kilobytes to a few megabytes).
MAX_VIEWS_BYTES = 32 << 20
NO_STACK = "(no Python stack: allocated from C++, e.g. autograd's backward thread)"
JSON = dict[str, Any]


def build_views(snapshot: Snapshot, phases_source: str = "snapshot annotations") -> JSON:
    """The tab's data for every device that has segments or trace entries.

    Args:
        snapshot: the loaded snapshot.
        phases_source: where `snapshot.annotations` came from, shown with the phases.

    Raises:
        ParseError: the views as JSON would be over `MAX_VIEWS_BYTES` (their size named).
    """
    devices = sorted({s.device for s in snapshot.segments} | set(snapshot.traces))
    views = {
        "version": VIEWS_VERSION,
        "allocator_settings": snapshot.settings,
        "devices": [_device(snapshot, d) | {"phases_source": phases_source} for d in devices],
    }
    size = len(json.dumps(views, separators=(",", ":")).encode())
    if size > MAX_VIEWS_BYTES:
        raise ParseError(
            f"the memory snapshot's views would be {size} bytes, over the {MAX_VIEWS_BYTES}-byte "
            "limit every viewer would download; record fewer entries or shallower stacks",
            source=snapshot.source,
        )
    return views


def _device(snapshot: Snapshot, device: int) -> JSON:
    entries = snapshot.traces.get(device, [])
    r = replay(device, snapshot.segments, entries)
    peak_i = r.peak_index
    at_peak = r.state_after(peak_i) if peak_i is not None else r.dump
    stacks = _Stacks()
    times = [e.time_us for e in entries]
    peak_time = times[peak_i] if peak_i is not None else None
    at_dump = _totals(r.dump)
    notes = []
    if peak_i is None:
        notes.append(
            "The history does not reach the allocated peak: allocated was highest before "
            "the first kept entry (the ring buffer of max_entries had wrapped, or recording "
            "started after it); the map 'at peak' is the dump's state."
        )
    if r.start_allocated > 0:
        notes.append(
            f"{r.start_allocated / 1e6:.1f} MB ({r.start_allocated} bytes) were allocated "
            "before the first kept entry (recording started after they were made, or the ring "
            "buffer wrapped); they count in every total and show as blocks without a stack."
        )
    return {
        "device": device,
        "entries": len(entries),
        "first_time_us": times[0] if times else None,
        "last_time_us": times[-1] if times else None,
        "start": {"allocated": r.start_allocated, "requested": r.start_requested,
                  "reserved": r.start_reserved},
        "dump": at_dump,
        "peak": {
            "entry": peak_i,
            "time_us": peak_time,
            "allocated": r.allocated[peak_i] if peak_i is not None else at_dump["allocated"],
            "requested": r.requested[peak_i] if peak_i is not None else None,
            "reserved": r.reserved[peak_i] if peak_i is not None else at_dump["reserved"],
            "max_reserved": max(r.reserved, default=r.start_reserved),
        },
        "notes": notes,
        "series": _series(r, times),
        "segments_at_peak": _segment_map(at_peak, stacks),
        "segments_at_dump": _segment_map(r.dump, stacks),
        "fragmentation": {"peak": _histogram(at_peak), "dump": _histogram(r.dump)},
        "top_stacks": _top_stacks(at_peak, stacks),
        "phases": _phases(snapshot.annotations, device, r, times),
        "stacks": stacks.table,
    }  # fmt: skip


def _totals(state: State) -> JSON:
    holes = list(_holes(state))
    return {
        "allocated": sum(b[0] for b in state.blocks.values()),
        "requested": sum(b[1] for b in state.blocks.values()),
        "reserved": sum(s[0] for s in state.segments.values()),
        "segments": len(state.segments),
        "blocks": len(state.blocks),
        "free_bytes": sum(size for _, size, _ in holes),
        "free_split_bytes": sum(size for _, size, split in holes if split),
    }


class _Stacks:
    """Stacks interned to indices, so many blocks with one stack store it once."""

    def __init__(self) -> None:
        self.table: list[list[str]] = []
        self._index: dict[Frames, int] = {}

    def id(self, frames: Frames) -> int:
        key = frames[:MAX_FRAMES] or (NO_STACK,)
        if key not in self._index:
            self._index[key] = len(self.table)
            self.table.append(list(key))
        return self._index[key]


def _layout(state: State) -> list[tuple[int, tuple[int, int, str], list[int]]]:
    """Segments by address, each with the addresses of the live blocks inside it."""
    starts = sorted(state.segments)
    inside: dict[int, list[int]] = defaultdict(list)
    for addr in sorted(state.blocks):
        i = bisect.bisect_right(starts, addr) - 1
        if i >= 0 and addr < starts[i] + state.segments[starts[i]][0]:
            inside[starts[i]].append(addr)
    return [(s, state.segments[s], inside[s]) for s in starts]


def _holes(state: State) -> list[tuple[int, int, bool]]:
    """Free ranges inside segments (address, size, whether the segment is split): what
    the allocator holds as inactive blocks (it merges neighbouring free blocks)."""
    return [
        h for start, seg, live in _layout(state) for h in _segment_holes(state, start, seg[0], live)
    ]


def _segment_holes(
    state: State, start: int, size: int, live: list[int]
) -> list[tuple[int, int, bool]]:
    out = []
    cursor = start
    for addr in live:
        if addr > cursor:
            out.append((cursor, addr - cursor, True))
        cursor = max(cursor, addr + state.blocks[addr][0])
    if cursor < start + size:
        out.append((cursor, start + size - cursor, bool(live)))
    return out


def _segment_map(state: State, stacks: _Stacks) -> list[JSON]:
    out = []
    for start, (size, stream, kind), live in _layout(state):
        parts: list[JSON] = [
            {"offset": a - start, "size": state.blocks[a][0], "requested": state.blocks[a][1],
             "state": "allocated", "stack": stacks.id(state.blocks[a][2])}
            for a in live
        ]  # fmt: skip
        parts += [
            {"offset": a - start, "size": s, "state": "free"}
            for a, s, _ in _segment_holes(state, start, size, live)
        ]
        parts.sort(key=lambda p: p["offset"])
        out.append(
            {"address": start, "size": size, "stream": stream, "type": kind, "blocks": parts}
        )
    return out


def _histogram(state: State) -> list[JSON]:
    """Free bytes inside segments by hole size: bucket k holds holes of [2^k, 2^(k+1));
    `split_bytes` is the part in segments that also hold live blocks (torch's
    `inactive_split_bytes`), the rest is wholly free segments."""
    buckets: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0])
    for _, size, split in _holes(state):
        k = size.bit_length() - 1
        buckets[k][0] += size
        buckets[k][1] += 1
        buckets[k][2] += size if split else 0
    return [
        {"lo": 1 << k, "hi": 1 << (k + 1), "bytes": b, "holes": n, "split_bytes": s}
        for k, (b, n, s) in sorted(buckets.items())
    ]


def _series(r: Replay, times: list[int | None]) -> JSON:
    n = len(r.entries)
    step = max(1, -(-n // MAX_POINTS))
    keep = []
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        keep.append(max(range(lo, hi), key=lambda i: (r.allocated[i], -i)))
    return {
        "bucketed": step > 1,
        "entry": keep,
        "time_us": [times[i] for i in keep],
        "allocated": [r.allocated[i] for i in keep],
        "requested": [r.requested[i] for i in keep],
        "reserved": [r.reserved[i] for i in keep],
        "action": [r.entries[i].action for i in keep],
    }


def _top_stacks(state: State, stacks: _Stacks) -> list[JSON]:
    by_stack: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for size, _, frames in state.blocks.values():
        row = by_stack[stacks.id(frames)]
        row[0] += size
        row[1] += 1
    top = sorted(by_stack.items(), key=lambda kv: (-kv[1][0], kv[0]))[:TOP_STACKS]
    return [{"stack": s, "bytes": b, "blocks": n} for s, (b, n) in top]


def _phases(notes: list[Annotation], device: int, r: Replay, times: list[int | None]) -> list[JSON]:
    """Each annotated interval's peak: the level when it starts, or any level inside it."""
    clean = [t if t is not None else -1 for t in times]
    open_: dict[str, list[tuple[int, int]]] = defaultdict(list)
    spans = []
    depth = 0
    for a in sorted((a for a in notes if a.device == device), key=lambda a: a.time_us):
        if a.stage == "START":
            open_[a.name].append((a.time_us, depth))
            depth += 1
        elif a.stage == "END" and open_[a.name]:
            start, d = open_[a.name].pop()
            depth = max(0, depth - 1)
            spans.append((start, d, a.name, a.time_us))
    spans.sort()
    return [_phase(name, s, end, d, r, clean) for s, d, name, end in spans[:MAX_PHASES]]


def _phase(name: str, start: int, end: int, depth: int, r: Replay, times: list[int]) -> JSON:
    lo = bisect.bisect_right(times, start)
    hi = bisect.bisect_right(times, end)
    before_a = r.allocated[lo - 1] if lo > 0 else r.start_allocated
    before_r = r.reserved[lo - 1] if lo > 0 else r.start_reserved
    inside = range(lo, hi)
    peak_i = max(inside, key=lambda i: r.allocated[i], default=None)
    peak = max(before_a, r.allocated[peak_i]) if peak_i is not None else before_a
    return {
        "name": name,
        "start_us": start,
        "end_us": end,
        "depth": depth,
        "start_allocated": before_a,
        "peak_allocated": peak,
        "peak_reserved": max([before_r, *(r.reserved[i] for i in inside)]),
        "peak_time_us": times[peak_i] if peak_i is not None and peak > before_a else start,
        "entries": len(inside),
    }
