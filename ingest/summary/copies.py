"""Memcpy and memset activity as columns: intervals for the time split, bytes by kind.

The host side of an H2D copy is its source and of a D2H copy its destination; its memory
kind ("Pinned" or "Pageable" in Kineto names) says whether the copy could run async.

Public surface: `CopyTrack`.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import Any

import numpy as np

from ingest._columns import NONE, arg_values, as_numpy, filled, sums_by
from ingest.classify import CopyName, copy_kind
from ingest.events import Event, EventBlock, EventKind
from ingest.summary.shape import CopyKind, TransferSummary
from ingest.summary.timesplit import Category

_HOST_KINDS = {"HtoD": 0, "DtoH": 1}


class CopyTrack:
    """Feed memcpy and memset events with `add` or `add_block`; read columns and `transfers()`."""

    def __init__(self) -> None:
        self._name_ids: dict[str, int] = {}
        self.kinds: list[tuple[str, CopyName]] = []  # per name id: ("memcpy"|"memset", parts)
        self.category: list[int] = []  # per name id: a timesplit Category
        self.c_name, self.c_start, self.c_dur = array("q"), array("q"), array("q")
        self.c_device, self.c_rank, self.c_bytes = array("q"), array("q"), array("q")
        self.c_stream, self.c_corr = array("q"), array("q")

    def add(self, event: Event) -> None:
        """Keep one memcpy or memset."""
        nid = self._name_ids.get(event.name)
        if nid is None:
            nid = self._new_name(event.name, event.kind)
        args = event.args
        device, rank, stream = event.device, event.rank, event.stream
        self.c_name.append(nid)
        self.c_start.append(event.start_ns)
        self.c_dur.append(event.dur_ns)
        self.c_device.append(NONE if device is None else device)
        self.c_rank.append(NONE if rank is None else rank)
        self.c_stream.append(NONE if stream is None else stream)
        corr = event.correlation
        self.c_corr.append(NONE if corr is None else corr)
        self.c_bytes.extend(_sizes([args.get("bytes") if args else None]))

    def add_block(self, block: EventBlock) -> None:
        """`add` for every row of a block, column by column (same ids, same order)."""
        n = len(block)
        for name in dict.fromkeys(block.name):
            if name not in self._name_ids:
                self._new_name(name, block.kind)
        self.c_name.extend(map(self._name_ids.__getitem__, block.name))
        self.c_start.extend(block.start_ns)
        self.c_dur.extend(block.dur_ns)
        for column, values in (
            (self.c_device, block.device), (self.c_rank, block.rank),
            (self.c_stream, block.stream), (self.c_corr, block.correlation),
        ):  # fmt: skip
            column.extend(filled(values, n))
        self.c_bytes.extend(_sizes(arg_values(block.args, "bytes", n)))

    def _new_name(self, name: str, kind: EventKind) -> int:
        nid = self._name_ids[name] = len(self.kinds)
        parts = copy_kind(name)
        if kind is EventKind.MEMSET:
            self.kinds.append(("memset", parts))
            self.category.append(Category.MEMSET)
        else:
            self.kinds.append(("memcpy", parts))
            host = parts.kind in _HOST_KINDS
            self.category.append(Category.COPY_HOST if host else Category.COPY_OTHER)
        return nid

    def transfers(self) -> TransferSummary:
        """Bytes by direction, the pinned/pageable share, and traffic per kind."""
        n = len(self.kinds)
        names = as_numpy(self.c_name)
        count = np.bincount(names, minlength=n).tolist() if len(names) else [0] * n
        size = sums_by(self.c_name, self.c_bytes, n)
        ns = sums_by(self.c_name, self.c_dur, n)
        merged: dict[tuple[str, str, str, str], list[int]] = {}
        for nid, (op, parts) in enumerate(self.kinds):
            row = merged.setdefault((op, *parts), [0, 0, 0])
            row[0] += count[nid]
            row[1] += size[nid]
            row[2] += ns[nid]
        kinds = [_copy_kind(key, *row) for key, row in merged.items()]
        kinds.sort(key=lambda k: (-k["bytes"], k["op"], k["kind"], k["src"], k["dst"]))
        return _transfers(kinds)


def _sizes(values: list[Any]) -> Sequence[int]:
    """The `bytes` args of copies as counted: a positive integer, else 0.

    >>> _sizes([5, 0, -3]), _sizes([5, None, 2.5, "7", True])
    ([5, 0, 0], [5, 0, 0, 0, True])
    """
    if len(values) > 16 and set(map(type, values)) == {int}:  # a block's usual column: in C
        return np.maximum(np.array(values, dtype=np.int64), 0).tolist()  # type: ignore[no-any-return]
    return [v if isinstance(v, int) and v > 0 else 0 for v in values]


def _copy_kind(key: tuple[str, str, str, str], count: int, size: int, ns: int) -> CopyKind:
    op, kind, src, dst = key
    return {
        "op": op,
        "kind": kind,
        "src": src,
        "dst": dst,
        "count": count,
        "bytes": size,
        "total_ns": ns,
        "bandwidth_gbps": round(size / ns, 3) if ns else None,
    }


def _transfers(kinds: list[CopyKind]) -> TransferSummary:
    by_dir = {"HtoD": 0, "DtoH": 0, "DtoD": 0}
    other = pinned = pageable = h2d_pageable = 0
    for k in kinds:
        if k["op"] != "memcpy":
            continue
        if k["kind"] in by_dir:
            by_dir[k["kind"]] += k["bytes"]
        else:
            other += k["bytes"]
        host = k["src"] if k["kind"] == "HtoD" else k["dst"] if k["kind"] == "DtoH" else ""
        if host == "Pinned":
            pinned += k["bytes"]
        elif host == "Pageable":
            pageable += k["bytes"]
            h2d_pageable += k["bytes"] if k["kind"] == "HtoD" else 0
    known = pinned + pageable
    return {
        "h2d_bytes": by_dir["HtoD"],
        "d2h_bytes": by_dir["DtoH"],
        "d2d_bytes": by_dir["DtoD"],
        "other_bytes": other,
        "pinned_bytes": pinned,
        "pageable_bytes": pageable,
        "pinned_pct": _pct(pinned, known),
        "pageable_pct": _pct(pageable, known),
        "h2d_pageable_pct": _pct(h2d_pageable, by_dir["HtoD"]),
        "kinds": kinds,
    }


def _pct(part: int, whole: int) -> float | None:
    return round(100.0 * part / whole, 3) if whole else None
