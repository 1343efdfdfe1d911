"""How a device's GPU span was spent: busy, idle, the split by category, and overlaps.

One sweep over the sorted start/end boundaries of every interval on a device answers
everything at once (unions per category, the exclusive split, overlaps, idle gaps). A
boundary is one integer, `(time << 4) | (category << 1) | is_start`, so sorting needs no
tuples and a million kernels sort in well under a second.

Public surface: `Category`, `boundaries`, `split_device`, `add_splits`, `Gap`.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from enum import IntEnum

from ingest.summary.shape import TimeSplit

Gap = tuple[int, int]  # (duration_ns, start offset from the span start)


class Category(IntEnum):
    """What an interval is; the exclusive split gives time to the lowest value first."""

    COMPUTE = 0
    COMMUNICATION = 1
    COPY_HOST = 2  # H2D and D2H memcpy
    COPY_OTHER = 3  # D2D, peer and unknown memcpy
    MEMSET = 4


def boundaries(out: list[int], start: int, dur: int, category: int) -> None:
    """Append the two boundary keys of one interval; `start` is relative to the span start.

    >>> keys = []; boundaries(keys, 10, 5, Category.MEMSET); keys
    [169, 248]
    """
    out.append((start << 4) | (category << 1) | 1)
    out.append(((start + dur) << 4) | (category << 1))


def split_device(keys: list[int], span_ns: int, max_gaps: int) -> tuple[TimeSplit, list[Gap]]:
    """Sweep one device's boundaries (sorted in place) over [0, span_ns).

    Returns:
        The time split and the `max_gaps` longest idle gaps, longest first.
    """
    # One flat loop on purpose: it runs once per boundary (two per interval), and a helper
    # call per segment would cost as much as the loop body.
    keys.sort()
    active = [0, 0, 0, 0, 0]
    busy = comp_u = comm_u = host_u = copy_u = mset_u = 0  # unions
    ex_comm = ex_copy = ex_mset = comm_comp = copy_comp = 0  # exclusive split, overlaps
    gaps: list[Gap] = []
    prev = depth = 0
    for key in keys:
        t = key >> 4
        if t > prev:
            seg = t - prev
            if depth:
                busy += seg
                comp, comm, host, other, mset = active
                if comp:
                    comp_u += seg
                    if comm:
                        comm_comp += seg
                    if host:
                        copy_comp += seg
                elif comm:
                    ex_comm += seg
                elif host or other:
                    ex_copy += seg
                else:
                    ex_mset += seg
                if comm:
                    comm_u += seg
                if host:
                    host_u += seg
                if host or other:
                    copy_u += seg
                if mset:
                    mset_u += seg
            elif len(gaps) < max_gaps or seg > gaps[0][0]:
                _keep(gaps, (seg, prev), max_gaps)
            prev = t
        code = key & 15
        step = 1 if code & 1 else -1
        active[code >> 1] += step
        depth += step
    if span_ns > prev:
        _keep(gaps, (span_ns - prev, prev), max_gaps)
    unions = (busy, comp_u, comm_u, host_u, copy_u, mset_u)
    return _split(span_ns, unions, (ex_comm, ex_copy, ex_mset), comm_comp, copy_comp), sorted(
        gaps, reverse=True
    )


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
