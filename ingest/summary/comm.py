"""Communication kernels by collective, with NCCL metadata sizes when recorded.

Kineto puts `Collective name`, `In msg nelems`, `dtype` and `Group size` on collective
kernels launched under `record_param_comms` (FORMATS.md §1.8). Without them the collective
is read from the kernel name (`ncclDevKernel_AllReduce_...` -> "allreduce").

Public surface: `CommTrack`, `collective_of`.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ingest._columns import as_numpy, sums_by
from ingest.stats import TraceStats
from ingest.summary.shape import Collective, CommunicationSummary

DTYPE_BYTES = {
    "Double": 8, "Float": 4, "Half": 2, "BFloat16": 2, "Long": 8, "Int": 4, "Short": 2,
    "Char": 1, "Byte": 1, "Bool": 1, "Float8_e4m3fn": 1, "Float8_e5m2": 1,
}  # fmt: skip
_KERNEL_COLLECTIVE = re.compile(r"(?:nccl|rccl|msccl)(?:Dev)?Kernel_([A-Za-z]+)", re.IGNORECASE)

Meta = tuple[str, int | None, str, int | None]  # collective, in nelems, dtype, group size


def collective_of(kernel_name: str) -> str:
    """The collective a communication kernel's name states, lower-cased, or "".

    >>> collective_of("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)")
    'allreduce'
    >>> collective_of("ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclWorkElem)"), collective_of("x")
    ('broadcast', '')
    """
    match = _KERNEL_COLLECTIVE.search(kernel_name)
    return match.group(1).lower() if match else ""


class CommTrack:
    """Keep the metadata of communication kernels; `summary(stats)` groups them."""

    def __init__(self) -> None:
        self._meta: dict[int, Meta] = {}

    def add(self, kernel_index: int, args: dict[str, Any]) -> None:
        """Keep the `record_param_comms` metadata of the kernel at `kernel_index`."""
        nelems, group = args.get("In msg nelems"), args.get("Group size")
        self._meta[kernel_index] = (
            str(args.get("Collective name") or ""),
            nelems if isinstance(nelems, int) else None,
            str(args.get("dtype") or ""),
            group if isinstance(group, int) else None,
        )

    def summary(self, stats: TraceStats) -> CommunicationSummary:
        """Communication kernels grouped by collective, largest total time first."""
        names, durs = as_numpy(stats.k_name), as_numpy(stats.k_dur)
        rows = (
            np.flatnonzero(np.asarray(stats.comm, dtype=np.bool_)[names]) if len(names) else names
        )
        collectives: list[str] = []  # the collective of each name id, then of each meta
        index: dict[str, int] = {}
        code = np.asarray(
            [index.setdefault(collective_of(n), len(index)) for n in stats.names], dtype=np.int64
        )[names[rows]] if len(rows) else rows  # fmt: skip
        metas = [(i, m) for i, m in sorted(self._meta.items()) if stats.comm[stats.k_name[i]]]
        at = np.searchsorted(rows, [i for i, _ in metas]).astype(np.int64)
        for j, (_, meta) in zip(at.tolist(), metas, strict=True):
            if meta[0]:
                code[j] = index.setdefault(meta[0], len(index))
        collectives = list(index)
        count = np.bincount(code, minlength=len(collectives)).tolist()
        totals = sums_by(code, durs[rows], len(collectives))
        groups = {c: [count[i], totals[i], [], set(), set()] for i, c in enumerate(collectives)}
        for j, (_, meta) in zip(at.tolist(), metas, strict=True):
            _add_meta(groups[collectives[code[j]]], meta)
        found = [_collective(name, *row) for name, row in groups.items() if row[0]]
        found.sort(key=lambda c: (-c["total_ns"], c["collective"]))
        return {"kernels": len(rows), "total_ns": sum(totals), "collectives": found}


def _add_meta(row: list[Any], meta: Meta) -> None:
    _, nelems, dtype, group = meta
    size = DTYPE_BYTES.get(dtype)
    row[2].append((nelems, None if nelems is None or size is None else nelems * size))
    if dtype:
        row[3].add(dtype)
    if group is not None:
        row[4].add(group)


def _collective(
    name: str, count: int, total: int, sizes: list[Any], dtypes: set[str], groups: set[int]
) -> Collective:
    nelems = [n for n, _ in sizes if n is not None]
    nbytes = [b for _, b in sizes if b is not None]
    return {
        "collective": name,
        "count": count,
        "total_ns": total,
        "bytes": sum(nbytes) if nbytes else None,
        "max_msg_bytes": max(nbytes) if nbytes else None,
        "max_in_msg_nelems": max(nelems) if nelems else None,
        "group_sizes": sorted(groups),
        "dtypes": sorted(dtypes),
    }
