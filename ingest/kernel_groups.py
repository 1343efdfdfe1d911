"""Kernel stats per group: stream, device, rank, launching CPU op, (CPU op, kernel name).

Grouped over the kernel columns of `TraceStats` (any `KernelColumns`) with numpy (lexsort,
group boundaries, `ingest.distribution.group_distributions`); only each group and each
(group, kernel name) pair is looked at in Python.

Public surface: `kernel_groups`, `KernelGroupStat`, `KernelColumns`, `GROUP_BYS`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from ingest._columns import NONE, Column, as_numpy, changes, group_starts, group_sums
from ingest.distribution import Distribution, group_distributions


class KernelColumns(Protocol):
    """What the grouping reads of `ingest.stats.TraceStats` (which imports this module, so
    it is named by shape, not imported): one entry per kernel launch in each column."""

    @property
    def k_name(self) -> Column: ...  # an index into `names`
    @property
    def k_dur(self) -> Column: ...
    @property
    def k_device(self) -> Column: ...
    @property
    def k_stream(self) -> Column: ...
    @property
    def k_rank(self) -> Column: ...
    @property
    def names(self) -> Sequence[str]: ...
    @property
    def kernel_ns(self) -> int: ...  # all kernels' time together


GROUP_BYS = ("stream", "device", "rank", "cpu_op", "cpu_op_kernel")
_NONE = NONE


@dataclass(frozen=True, slots=True)
class KernelGroupStat:
    """Kernel time of one stream, device, rank, launching CPU op, or (launching CPU op, kernel
    name) pair (`group_by` "cpu_op_kernel": the compare view matches renamed kernels by it)."""

    group_by: str
    key: str  # label: "stream 7 (GPU 0)", "GPU 0", "rank 3", or the CPU op's name
    device: int | None
    stream: int | None
    rank: int | None
    kernels: int  # distinct kernel names
    top_kernel: str  # the kernel name with the most time in this group
    count: int
    total_ns: int
    mean_ns: int
    min_ns: int
    max_ns: int
    p50_ns: int
    p95_ns: int
    pct: float

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form."""
        return asdict(self)


def kernel_groups(
    stats: KernelColumns, cpu_op_of: Column | None = None, op_names: Sequence[str] = ()
) -> list[KernelGroupStat]:
    """Kernel time per stream, device, rank (when ranks are known), launching CPU op, and
    (launching CPU op, kernel name) pair.

    Args:
        cpu_op_of: per kernel (launch order), the index into `op_names` of the CPU op
            that launched it, or -1; None skips the `cpu_op` grouping.
        op_names: CPU op names.

    Returns:
        Rows ordered by `group_by` (as in `GROUP_BYS`), then total time, largest first
        (ties by key, then by the group's first launch).
    """
    rows: list[KernelGroupStat] = []
    if not stats.k_dur:
        return rows
    ops = None if cpu_op_of is None else np.asarray(cpu_op_of, dtype=np.int64)
    for group_by in GROUP_BYS:
        keys = _group_keys(stats, group_by, ops)
        if keys is not None:
            rows.extend(_groups(stats, group_by, keys, op_names))
    return rows


def _group_keys(
    stats: KernelColumns, group_by: str, ops: NDArray[np.int64] | None
) -> tuple[NDArray[np.int64], ...] | None:
    """The key columns of a grouping; a kernel whose first key is -1 is left out of the
    groupings by rank or CPU op (an unknown rank or launching op)."""
    rank = as_numpy(stats.k_rank)
    if group_by == "stream":
        return rank, as_numpy(stats.k_device), as_numpy(stats.k_stream)
    if group_by == "device":
        return rank, as_numpy(stats.k_device)
    if group_by == "rank":
        return (rank,) if bool((rank != _NONE).any()) else None
    if ops is None:
        return None
    return (ops, as_numpy(stats.k_name)) if group_by == "cpu_op_kernel" else (ops,)


def _groups(
    stats: KernelColumns,
    group_by: str,
    keys: tuple[NDArray[np.int64], ...],
    op_names: Sequence[str],
) -> list[KernelGroupStat]:
    names, durs = as_numpy(stats.k_name), as_numpy(stats.k_dur)
    if group_by not in ("stream", "device"):
        kept = np.flatnonzero(keys[0] != _NONE)
        keys, names, durs = tuple(k[kept] for k in keys), names[kept], durs[kept]
    if not len(durs):
        return []
    order = np.lexsort((durs, *reversed(keys)))
    starts = group_starts(*(k[order] for k in keys))
    group_of = np.empty(len(order), dtype=np.int64)
    group_of[order] = np.cumsum(changes(*(k[order] for k in keys))) - 1
    firsts = np.minimum.reduceat(order, starts).tolist()
    tops = _top_names(stats, group_of, names, durs, len(starts))
    gpu_total = stats.kernel_ns
    rows = [
        _group_row(stats, group_by, key, dist, total, top, gpu_total, op_names)
        for key, (dist, total), top in zip(
            zip(*(k[order][starts].tolist() for k in keys), strict=True),
            group_distributions(durs[order], starts),
            tops,
            strict=True,
        )
    ]
    by_first = dict(zip(map(id, rows), firsts, strict=True))
    rows.sort(key=lambda r: (-r.total_ns, r.key, by_first[id(r)]))
    return rows


def _top_names(
    stats: KernelColumns,
    group_of: NDArray[np.int64],
    names: NDArray[np.int64],
    durs: NDArray[np.int64],
    groups: int,
) -> list[tuple[int, int]]:
    """Per group, (distinct kernel names, the name id with the most time; ties by name)."""
    order = np.lexsort((names, group_of))
    starts = group_starts(group_of[order], names[order])
    totals = group_sums(durs[order], starts).tolist()
    pair_group = group_of[order][starts].tolist()
    pair_name = names[order][starts].tolist()
    count = [0] * groups
    best: list[tuple[int, str, int]] = [(1, "", -1)] * groups  # (-total, name, id)
    text = stats.names
    for g, nid, total in zip(pair_group, pair_name, totals, strict=True):
        count[g] += 1
        candidate = (-total, text[nid], nid)
        if best[g][2] == -1 or candidate < best[g]:
            best[g] = candidate
    return [(n, b[2]) for n, b in zip(count, best, strict=True)]


def _group_row(
    stats: KernelColumns,
    group_by: str,
    key: tuple[int, ...],
    dist: Distribution,
    total: int,
    top: tuple[int, int],
    gpu_total: int,
    op_names: Sequence[str],
) -> KernelGroupStat:
    rank, device, stream = _key_parts(group_by, key)
    return KernelGroupStat(
        group_by=group_by,
        key=op_names[key[0]] if group_by.startswith("cpu_op") else _label(rank, device, stream),
        device=device,
        stream=stream,
        rank=rank,
        kernels=top[0],
        top_kernel=stats.names[top[1]],
        count=dist["count"],
        total_ns=total,
        mean_ns=dist["mean_ns"],
        min_ns=dist["min_ns"],
        max_ns=dist["max_ns"],
        p50_ns=dist["p50_ns"],
        p95_ns=dist["p95_ns"],
        pct=pct(total, gpu_total),
    )


def _key_parts(group_by: str, key: tuple[int, ...]) -> tuple[int | None, int | None, int | None]:
    """(rank, device, stream) of a group key, None where unknown or not part of the key."""
    if group_by == "stream":
        rank, device, stream = key
    elif group_by == "device":
        (rank, device), stream = key, _NONE
    elif group_by == "rank":
        (rank,), device, stream = key, _NONE, _NONE
    else:
        return None, None, None
    return tuple(None if v == _NONE else v for v in (rank, device, stream))  # type: ignore[return-value]


def _label(rank: int | None, device: int | None, stream: int | None) -> str:
    """A readable group key.

    >>> _label(None, 0, 7), _label(3, 1, None), _label(2, None, None)
    ('stream 7 (GPU 0)', 'rank 3 GPU 1', 'rank 2')
    """
    parts = []
    if rank is not None:
        parts.append(f"rank {rank}")
    if device is not None:
        parts.append(f"GPU {device}")
    text = " ".join(parts)
    return f"stream {stream} ({text})" if stream is not None else text


def pct(part: int, whole: int) -> float:
    """`part` as a percentage of `whole`, rounded to 3 decimals (0.0 when whole is 0)."""
    return round(100.0 * part / whole, 3) if whole else 0.0
