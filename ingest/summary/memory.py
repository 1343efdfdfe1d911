"""GPU memory from `[memory]` events: peaks per device and per phase, and a thinned series.

The caching allocator reports its totals after every allocation and free (`Total
Allocated`, `Total Reserved`, FORMATS.md §1.9). 2021 traces carry only the signed `Bytes`
of each event, so there the allocated total is their running sum and reserved is unknown
(reported as 0). Host memory (`Device Type` 0 or `Device Id` -1) is left out.

A phase's peak is the highest total at any sample inside its ranges, counting the total in
force when each range began (the last sample before it), since memory held on entry is held
during the phase too.

Public surface: `MemoryTrack`, `MAX_POINTS`, `thin`.
"""

from __future__ import annotations

import operator
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from itertools import compress, repeat
from typing import Any

from ingest._columns import arg_values, to_block
from ingest.events import Event, EventBlock
from ingest.summary.shape import DeviceMemory, MemorySeries, PhaseMemory

MAX_POINTS = 2000
_CPU_DEVICE_TYPE = 0

_TOTALS = ("Total Allocated", "Total Reserved", "Bytes")
_BATCH = 4096

Intervals = list[tuple[int, int]]


def _take(values: Sequence[Any], rows: list[int]) -> list[Any]:
    return list(map(values.__getitem__, rows))


class _Track:
    __slots__ = ("allocated", "reserved", "running", "ts")

    def __init__(self) -> None:
        self.ts, self.allocated, self.reserved = array("q"), array("q"), array("q")
        self.running = 0

    def add(
        self, ts: list[int], allocated: list[Any], reserved: list[Any], sizes: list[Any]
    ) -> None:
        """Append samples (see `MemoryTrack.add_block` for the rule); in C unless some
        sample lacks an integer total (2021 traces), then for those samples alone."""
        self.ts.extend(ts)
        ints = map(isinstance, allocated, repeat(int))
        missing = list(compress(range(len(allocated)), map(operator.not_, ints)))
        if missing:
            allocated = list(allocated)
            running = self.running
            for i in missing:
                size = sizes[i]
                running += size if isinstance(size, int) else 0
                allocated[i] = running
            self.running = running
        self.allocated.extend(allocated)
        if not all(map(isinstance, reserved, repeat(int))):
            reserved = [r if isinstance(r, int) else 0 for r in reserved]
        self.reserved.extend(reserved)


class MemoryTrack:
    """Feed `[memory]` events with `add_block` (or `add`); `devices()` and `phases()`
    summarise them."""

    def __init__(self) -> None:
        self._tracks: dict[tuple[int | None, int], _Track] = {}
        self._pending: list[Event] = []

    def add(self, event: Event) -> None:
        """Keep the allocator totals of one GPU memory event (taken in by `add_block`, a
        batch at a time: the rule has one definition, and single events stay cheap)."""
        pending = self._pending
        pending.append(event)
        if len(pending) >= _BATCH:
            self.flush()

    def flush(self) -> None:
        """Take in the events `add` holds (also done by every reader)."""
        if self._pending:
            block = to_block(self._pending)
            self._pending = []
            self.add_block(block)

    def add_block(self, block: EventBlock) -> None:
        """Keep the allocator totals of a block's GPU memory events, column by column.

        A row counts when its args name a GPU (`Device Id` an integer >= 0, `Device Type`
        not the CPU's); its allocated total is `Total Allocated`, or else the running sum
        of the device's `Bytes`; its reserved total is `Total Reserved`, or else 0.
        """
        self.flush()  # events held by `add` came first
        n, args = len(block), block.args
        if args is None:
            return
        device = arg_values(args, "Device Id", n)
        on_cpu = map(operator.eq, arg_values(args, "Device Type", n), repeat(_CPU_DEVICE_TYPE))
        gpu = list(
            map(operator.and_, map(isinstance, device, repeat(int)), map(operator.not_, on_cpu))
        )
        rows = list(compress(range(n), gpu))
        rows = list(compress(rows, map(operator.ge, _take(device, rows), repeat(0))))
        if not rows:
            return
        devices = _take(device, rows)
        ranks = block.rank
        keys: list[Any] = (
            devices if ranks is None else list(zip(_take(ranks, rows), devices, strict=True))
        )
        kept = _take(args, rows)
        allocated = arg_values(kept, "Total Allocated", len(rows))
        complete = all(map(isinstance, allocated, repeat(int)))
        columns = [
            _take(block.start_ns, rows), allocated, arg_values(kept, "Total Reserved", len(rows)),
            [None] * len(rows) if complete else arg_values(kept, "Bytes", len(rows)),
        ]  # fmt: skip
        distinct = dict.fromkeys(keys)
        for value in distinct:
            key = (None, value) if ranks is None else value
            mine = columns if len(distinct) == 1 else [
                list(compress(c, map(operator.eq, keys, repeat(value)))) for c in columns
            ]  # fmt: skip
            track = self._tracks.get(key)
            if track is None:
                track = self._tracks[key] = _Track()
            track.add(*mine)

    def _sorted(self) -> list[tuple[tuple[int | None, int], list[int], list[int], list[int]]]:
        self.flush()
        out = []
        for key in sorted(self._tracks, key=lambda k: (-1 if k[0] is None else k[0], k[1])):
            track = self._tracks[key]
            order = sorted(range(len(track.ts)), key=track.ts.__getitem__)
            out.append(
                (
                    key,
                    [track.ts[i] for i in order],
                    [track.allocated[i] for i in order],
                    [track.reserved[i] for i in order],
                )
            )
        return out

    def devices(self, max_points: int = MAX_POINTS) -> list[DeviceMemory]:
        """Per device: peaks and a series of at most `max_points` points."""
        result: list[DeviceMemory] = []
        for (rank, device), ts, allocated, reserved in self._sorted():
            peak_a = max(range(len(ts)), key=allocated.__getitem__)
            peak_r = max(range(len(ts)), key=reserved.__getitem__)
            keep = thin(allocated, reserved, max_points)
            series: MemorySeries = {
                "ts_ns": [ts[i] for i in keep],
                "allocated_bytes": [allocated[i] for i in keep],
                "reserved_bytes": [reserved[i] for i in keep],
            }
            result.append(
                {
                    "device": device,
                    "rank": rank,
                    "samples": len(ts),
                    "peak_allocated_bytes": allocated[peak_a],
                    "peak_allocated_ts_ns": ts[peak_a],
                    "peak_reserved_bytes": reserved[peak_r],
                    "peak_reserved_ts_ns": ts[peak_r],
                    "series": series,
                }
            )
        return result

    def phases(self, phases: dict[tuple[int | None, str], Intervals]) -> list[PhaseMemory]:
        """Peak memory per device and phase; `phases` maps (rank, phase) to merged ranges."""
        result: list[PhaseMemory] = []
        for (rank, device), ts, allocated, reserved in self._sorted():
            for (phase_rank, phase), ranges in sorted(phases.items(), key=_phase_order):
                if phase_rank != rank:
                    continue
                peak_a, peak_r = _peak_within(ts, allocated, reserved, ranges)
                result.append(
                    {
                        "phase": phase,
                        "device": device,
                        "rank": rank,
                        "duration_ns": sum(end - start for start, end in ranges),
                        "peak_allocated_bytes": peak_a,
                        "peak_reserved_bytes": peak_r,
                    }
                )
        return result


_PHASES = ("forward", "backward", "optimizer")


def _phase_order(item: tuple[tuple[int | None, str], Any]) -> int:
    return _PHASES.index(item[0][1]) if item[0][1] in _PHASES else len(_PHASES)


def _peak_within(
    ts: list[int], allocated: list[int], reserved: list[int], ranges: Intervals
) -> tuple[int | None, int | None]:
    best_a: int | None = None
    best_r: int | None = None
    for start, end in ranges:
        lo = max(bisect_right(ts, start) - 1, 0)  # the total in force at the range start
        hi = bisect_left(ts, end)
        if lo >= hi or ts[lo] >= end:
            continue
        a, r = max(allocated[lo:hi]), max(reserved[lo:hi])
        best_a = a if best_a is None else max(best_a, a)
        best_r = r if best_r is None else max(best_r, r)
    return best_a, best_r


def thin(allocated: list[int], reserved: list[int], max_points: int) -> list[int]:
    """Indices of at most `max_points` samples that keep every bucket's extremes.

    The samples are cut into max_points // 3 buckets; from each, the highest and lowest
    allocated and the highest reserved sample are kept, so every peak and trough that a
    chart can show survives.

    >>> thin([1, 9, 2, 8, 3, 7], [0] * 6, 6), thin([1, 9, 2, 8, 3, 7], [0] * 6, 3)
    ([0, 1, 2, 3, 4, 5], [0, 1])
    >>> thin([5, 1, 9, 2, 8, 3, 7, 4, 6], [0] * 9, 3)
    [0, 1, 2]
    """
    n = len(allocated)
    if n <= max_points:
        return list(range(n))
    buckets = max(max_points // 3, 1)
    keep: set[int] = set()
    for b in range(buckets):
        lo, hi = b * n // buckets, (b + 1) * n // buckets
        if lo >= hi:
            continue
        indices = range(lo, hi)
        keep.add(max(indices, key=allocated.__getitem__))
        keep.add(min(indices, key=allocated.__getitem__))
        keep.add(max(indices, key=reserved.__getitem__))
    return sorted(keep)
