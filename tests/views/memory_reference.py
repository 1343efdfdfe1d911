"""Memory by op, computed straight from a Kineto JSON file: the tests' independent answer.

No perfdash code: the file is read with `json` (`Decimal` times, so µs become exact ns),
each `[memory]` event is given to the innermost `cpu_op` or `user_annotation` of its own
thread by brute force (every one whose [ts, ts + dur) holds the event, the latest-starting
one, the shortest on a tie), and allocations are paired with frees by `Addr` in time order
(file order on a tie). With `stacks`, a row is (op name, the `python_function` names on the
op's thread whose range holds the op's start, outermost first).
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np

OUTSIDE = "(outside any op)"


def load(source: Path | bytes) -> dict[str, Any]:
    raw = source.read_bytes() if isinstance(source, Path) else source
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    doc: dict[str, Any] = json.loads(raw, parse_float=Decimal)
    return doc


def _ns(us: Any) -> int:
    return int(Decimal(us) * 1000)


def _on_device(args: dict[str, Any], device: int) -> bool:
    if args.get("Device Type") == 0:
        return device == -1
    return args.get("Device Id") == device and device >= 0


@dataclass
class Expected:
    """Per op: [allocs, alloc_bytes, frees, free_bytes, held_bytes, peak_bytes]."""

    ops: dict[Any, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0] * 6))
    peak: dict[Any, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    events: int = 0
    outside: int = 0
    unmatched: list[int] = field(default_factory=list)
    peak_ts_ns: int = 0
    peak_allocated: int = 0


def _stack(events: list[dict[str, Any]], op: dict[str, Any]) -> tuple[str, ...]:
    t = _ns(op["ts"])
    frames = [
        e for e in events
        if e.get("cat") == "python_function" and (e["pid"], e["tid"]) == (op["pid"], op["tid"])
        and _ns(e["ts"]) <= t < _ns(e["ts"]) + _ns(e["dur"])
    ]  # fmt: skip
    frames.sort(key=lambda e: (_ns(e["ts"]), -_ns(e["dur"])))
    return tuple(e["name"] for e in frames)


def _owners(events: list[dict[str, Any]], mems: list[dict[str, Any]], stacks: bool) -> list[Any]:
    ops = [
        e for e in events if e.get("cat") in ("cpu_op", "user_annotation") and e.get("ph") == "X"
    ]
    by_thread: dict[tuple[Any, Any], list[int]] = defaultdict(list)
    for i, e in enumerate(ops):
        by_thread[(e["pid"], e["tid"])].append(i)
    arrays = {}
    for thread, idx in by_thread.items():
        starts = np.array([_ns(ops[i]["ts"]) for i in idx], dtype=np.int64)
        ends = starts + np.array([_ns(ops[i]["dur"]) for i in idx], dtype=np.int64)
        arrays[thread] = (np.array(idx), starts, ends)
    out = []
    for m in mems:
        found = arrays.get((m["pid"], m["tid"]))
        if found is None:
            out.append(OUTSIDE)
            continue
        idx, starts, ends = found
        t = _ns(m["ts"])
        hold = np.nonzero((starts <= t) & (t < ends))[0]
        if len(hold) == 0:
            out.append(OUTSIDE)
            continue
        best = min(hold, key=lambda j: (-starts[j], ends[j] - starts[j]))
        op = ops[idx[best]]
        out.append((op["name"], _stack(events, op)) if stacks else op["name"])
    return out


def expected(source: Path | bytes, device: int, stacks: bool = False) -> Expected:
    """The per-op and at-peak answer for one device (-1: host memory) of one file, keyed by
    op name, or by (name, stack) with `stacks` (the row outside any op: (OUTSIDE, ()))."""
    events = load(source)["traceEvents"]
    order = [
        (i, e)
        for i, e in enumerate(events)
        if e.get("name") == "[memory]" and _on_device(e.get("args") or {}, device)
    ]
    order.sort(key=lambda ie: (_ns(ie[1]["ts"]), ie[0]))
    mems = [e for _, e in order]
    owners = _owners(events, mems, stacks)
    outside: Any = (OUTSIDE, ()) if stacks else OUTSIDE
    owners = [outside if o == OUTSIDE else o for o in owners]
    out = Expected(events=len(mems))
    best = None
    for k, m in enumerate(mems):
        total = m["args"]["Total Allocated"]
        if best is None or total > best:
            best, out.peak_ts_ns, out.peak_allocated, peak_index = total, _ns(m["ts"]), total, k
    open_: dict[int, tuple[int, Any, int]] = {}  # addr -> (index, owner, bytes)
    blocks: list[list[Any]] = []  # [index, owner, bytes, free_index]
    for k, (m, owner) in enumerate(zip(mems, owners, strict=True)):
        size, addr = m["args"]["Bytes"], m["args"]["Addr"]
        out.outside += owner == outside and size != 0
        if size > 0:
            if addr in open_:
                blocks[open_[addr][0]][3] = k
            open_[addr] = (len(blocks), owner, size)
            blocks.append([k, owner, size, None])
            row = out.ops[owner]
            row[0] += 1
            row[1] += size
        elif size < 0:
            row = out.ops[owner]
            row[2] += 1
            row[3] += -size
            if addr in open_:
                blocks[open_.pop(addr)[0]][3] = k
            else:
                out.unmatched.append(-size)
    for index, owner, size, free_index in blocks:
        if free_index is None:
            out.ops[owner][4] += size
        if index <= peak_index and (free_index is None or free_index > peak_index):
            out.ops[owner][5] += size
            out.peak[owner][0] += 1
            out.peak[owner][1] += size
    return out
