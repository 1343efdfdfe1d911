"""How a device's GPU span was spent: busy, idle, the split by category, and overlaps.

One sweep over the sorted start/end boundaries of every interval on a device answers
everything at once (unions per category, the exclusive split, overlaps, idle gaps), in
numpy: the number of open intervals of each category between consecutive boundaries is a
cumulative sum, and every figure is a sum of segment lengths under a mask.

Public surface: `Category`, `split_device`, `add_splits`, `Gap`.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from enum import IntEnum

import numpy as np
from numpy.typing import NDArray

from ingest.summary.shape import TimeSplit

Gap = tuple[int, int]  # (duration_ns, start offset from the span start)


class Category(IntEnum):
    """What an interval is; the exclusive split gives time to the lowest value first."""

    COMPUTE = 0
    COMMUNICATION = 1
    COPY_HOST = 2  # H2D and D2H memcpy
    COPY_OTHER = 3  # D2D, peer and unknown memcpy
    MEMSET = 4


def split_device(
    starts: NDArray[np.int64],
    ends: NDArray[np.int64],
    categories: NDArray[np.int64],
    span_ns: int,
    max_gaps: int,
) -> tuple[TimeSplit, list[Gap]]:
    """Sweep one device's intervals over [0, span_ns), over columns.

    Args:
        starts: interval starts, relative to the span start.
        ends: interval ends, likewise.
        categories: each interval's `Category`.
        span_ns: the span's length.
        max_gaps: how many idle gaps to keep.

    Returns:
        The time split and the `max_gaps` longest idle gaps, longest first.
    """
    times = np.maximum(np.concatenate((starts, ends, [0])), 0)  # before 0 counts at 0
    steps = np.concatenate((np.ones(len(starts)), -np.ones(len(ends)), [0]))
    codes = np.concatenate((categories, categories, [0]))
    at, where = np.unique(times, return_inverse=True)
    width = len(at)  # active[c, i]: intervals of category c open over [at[i], at[i + 1])
    delta = np.bincount(codes * width + where, weights=steps, minlength=len(Category) * width)
    active = np.cumsum(delta.reshape(len(Category), width).astype(np.int64), axis=1)[:, :-1] != 0
    seg = np.diff(at)
    depth = np.cumsum(np.bincount(where, weights=steps, minlength=width).astype(np.int64))
    busy = depth[:-1] != 0
    comp, comm, host, other, mset = (row & busy for row in active)
    copy = host | other
    rest = busy & ~comp

    def ns(mask: NDArray[np.bool_]) -> int:
        return int(seg[mask].sum())

    unions = (ns(busy), ns(comp), ns(comm), ns(host), ns(copy), ns(mset))
    exclusive = (ns(rest & comm), ns(rest & ~comm & copy), ns(rest & ~comm & ~copy))
    idle = ~busy
    final = (span_ns - int(at[-1]), int(at[-1])) if span_ns > at[-1] else None
    gaps = _longest(seg[idle], at[:-1][idle], final, max_gaps)
    return _split(span_ns, unions, exclusive, ns(comp & comm), ns(comp & host)), gaps


def _longest(
    seg: NDArray[np.int64], start: NDArray[np.int64], final: Gap | None, size: int
) -> list[Gap]:
    """The `size` gaps a sweep in time order keeps: a gap enters when there is room or it is
    longer than the shortest kept (the trailing gap: when it is larger as a tuple), evicting
    the smallest tuple. Only gaps at least as long as the size-th longest can be kept, so
    only those are swept one by one."""
    if len(seg) + (final is not None) > size > 0:
        lengths = np.append(seg, final[0]) if final is not None else seg
        shortest = np.partition(lengths, len(lengths) - size)[len(lengths) - size]
        keep = seg >= shortest
        seg, start = seg[keep], start[keep]
    heap: list[Gap] = []
    for gap in zip(seg.tolist(), start.tolist(), strict=True):
        if len(heap) < size or gap[0] > heap[0][0]:
            _keep(heap, gap, size)
    if final is not None:
        _keep(heap, final, size)
    return sorted(heap, reverse=True)


def _keep(heap: list[Gap], gap: Gap, size: int) -> None:
    if len(heap) < size:
        heapq.heappush(heap, gap)
    elif gap > heap[0]:
        heapq.heapreplace(heap, gap)


def _split(
    span: int,
    unions: tuple[int, int, int, int, int, int],
    ex: tuple[int, int, int],
    comm_comp: int,
    copy_comp: int,
) -> TimeSplit:
    busy, comp, comm, host, copy, mset = unions
    return {
        "span_ns": span,
        "busy_ns": busy,
        "idle_ns": span - busy,
        "busy_pct": _pct(busy, span) or 0.0,
        "idle_pct": _pct(span - busy, span) or 0.0,
        "compute_ns": comp,
        "communication_ns": comm,
        "memcpy_ns": copy,
        "copy_host_ns": host,
        "memset_ns": mset,
        "exclusive": {
            "compute_ns": comp,
            "communication_ns": ex[0],
            "memcpy_ns": ex[1],
            "memset_ns": ex[2],
            "idle_ns": span - busy,
        },
        "comm_compute_overlap_ns": comm_comp,
        "comm_compute_overlap_pct": _pct(comm_comp, comm),
        "copy_compute_overlap_ns": copy_comp,
        "copy_compute_overlap_pct": _pct(copy_comp, host),
    }


def add_splits(splits: list[TimeSplit]) -> TimeSplit:
    """All devices together: every ns field summed, the percentages recomputed."""

    def total(field: Callable[[TimeSplit], int]) -> int:
        return sum(field(s) for s in splits)

    unions = (
        total(lambda s: s["busy_ns"]),
        total(lambda s: s["compute_ns"]),
        total(lambda s: s["communication_ns"]),
        total(lambda s: s["copy_host_ns"]),
        total(lambda s: s["memcpy_ns"]),
        total(lambda s: s["memset_ns"]),
    )
    ex = (
        total(lambda s: s["exclusive"]["communication_ns"]),
        total(lambda s: s["exclusive"]["memcpy_ns"]),
        total(lambda s: s["exclusive"]["memset_ns"]),
    )
    return _split(
        total(lambda s: s["span_ns"]),
        unions,
        ex,
        total(lambda s: s["comm_compute_overlap_ns"]),
        total(lambda s: s["copy_compute_overlap_ns"]),
    )


def _pct(part: int, whole: int) -> float | None:
    return round(100.0 * part / whole, 3) if whole else None
