"""The GPU tables derived once at ingest: each rank's split, and each device's timeline of
exclusive busy segments, from which any window's split is a sum (`step_breakdown`).

- rank_splits: per unit (a rank; without ranks, each device when there are several), the
  split of its GPU span [first start, last end) over all its devices, as `ranks` reports
  it (the window is the unit's own, so it does not depend on anything chosen later);
- gpu_segments: per (rank, device), the device's time cut where the set of open intervals
  changes, each busy piece labelled with the category the exclusive split gives it
  (compute > communication > memcpy > memset) and runs of one label merged. Clipping the
  intervals to a window and sweeping them (`gpu_work.split_window`) sees, at each instant,
  the same open set as the whole-device sweep, so a window's exclusive split is the sum of
  its segments clipped to it, exactly;
- gpu_devices: the devices each rank's GPU work ran on (a device whose events all last
  0 ns has no segment, but is a device of the rank).

Public surface: `gpu_tables`, `EXCLUSIVE`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from backend.services.analysis.gpu_work import NO_RANK, GpuWork, load_gpu_work, split_window
from backend.services.analysis.stored import counts, rows_table
from ingest.summary.timesplit import Category

EXCLUSIVE = ("compute_ns", "communication_ns", "memcpy_ns", "memset_ns")  # segment labels
RANK_SPLIT_SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int32()),
        pa.field("device", pa.int64()),  # the unit's device, without ranks; else null
        pa.field("devices", pa.list_(pa.int64()), nullable=False),
        *counts("start_ns", "end_ns", "span_ns", *EXCLUSIVE, "idle_ns"),
        *counts("comm_compute_overlap_ns"),
        pa.field("comm_compute_overlap_pct", pa.float64()),
    ]
)
GPU_SEGMENT_SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int32(), nullable=False),  # NO_RANK: none
        pa.field("device", pa.int64(), nullable=False),  # -1: unknown
        *counts("start_ns", "end_ns"),
        pa.field("label", pa.int8(), nullable=False),  # index into EXCLUSIVE
    ]
)
GPU_DEVICE_SCHEMA = pa.schema(
    [pa.field("rank", pa.int32(), nullable=False), pa.field("device", pa.int64(), nullable=False)]
)

Unit = tuple[int | None, int | None]


def _units(work: GpuWork) -> list[tuple[Unit, GpuWork]]:
    """Each rank's work; without ranks, each device's when there are several."""
    out: list[tuple[Unit, GpuWork]] = []
    for code in sorted(set(work.rank.tolist())):
        rank = None if code == NO_RANK else code
        mine = work.of(rank)
        if rank is None and len(mine.devices()) > 1:
            out.extend(((None, d), mine.of(None, d)) for d in mine.devices())
        else:
            out.append(((rank, None), mine))
    return out


def _split_row(unit: Unit, mine: GpuWork) -> tuple[object, ...]:
    lo, hi = int(mine.start.min()), int(mine.end.max())
    split = split_window(mine, lo, hi)
    ex = split["exclusive"]
    devices = [d for d in mine.devices() if d >= 0]
    return (
        *unit, devices, lo, hi, split["span_ns"], *(ex[c] for c in EXCLUSIVE), ex["idle_ns"],  # type: ignore[literal-required]
        split["comm_compute_overlap_ns"], split["comm_compute_overlap_pct"],
    )  # fmt: skip


def _segments(work: GpuWork) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """One device's exclusive busy segments (start, end, label), in time order, with the
    sweep of `ingest.summary.timesplit.split_device` over absolute times."""
    times = np.concatenate((work.start, work.end))
    steps = np.concatenate((np.ones(len(work.start)), -np.ones(len(work.end))))
    codes = np.concatenate((work.category, work.category))
    at, where = np.unique(times, return_inverse=True)
    width = len(at)
    delta = np.bincount(codes * width + where, weights=steps, minlength=len(Category) * width)
    active = np.cumsum(delta.reshape(len(Category), width).astype(np.int64), axis=1)[:, :-1] != 0
    busy = np.cumsum(np.bincount(where, weights=steps, minlength=width).astype(np.int64))[:-1] != 0
    comp, comm, host, other = (row & busy for row in active[:4])
    label = np.full(width - 1, 3, np.int64)  # busy and nothing else open: memset
    label[host | other] = 2
    label[comm] = 1
    label[comp] = 0
    label[~busy] = -1
    start, end = at[:-1], at[1:]
    keep = label >= 0
    start, end, label = start[keep], end[keep], label[keep]
    # a run of one label over touching pieces is one segment
    first = np.ones(len(label), bool)
    first[1:] = (label[1:] != label[:-1]) | (start[1:] != end[:-1])
    last = np.ones(len(label), bool)
    last[:-1] = first[1:]
    return start[first], end[last], label[first]


def gpu_tables(events: Path, ranks: list[int | None]) -> dict[str, pa.Table]:
    """The part's rank_splits, gpu_segments and gpu_devices tables.

    Args:
        events: one events file holding whole ranks.
        ranks: the ranks in it, each read on its own so one rank's GPU work is held at a time.
    """
    splits: list[tuple[object, ...]] = []
    columns: list[list[NDArray[np.int64]]] = [[], [], [], [], []]
    devices: list[tuple[int, int]] = []
    for rank in ranks:
        work = load_gpu_work(events, rank)
        splits.extend(_split_row(unit, mine) for unit, mine in _units(work))
        code = NO_RANK if rank is None else rank
        for device in work.devices():
            devices.append((code, device))
            start, end, label = _segments(work.of(rank, device))
            n = len(start)
            found = (np.full(n, code), np.full(n, device), start, end, label)
            for column, values in zip(columns, found, strict=True):
                column.append(values)
    segments = pa.Table.from_arrays(
        [
            pa.array(np.concatenate(c) if c else np.zeros(0, np.int64), type=f.type)
            for c, f in zip(columns, GPU_SEGMENT_SCHEMA, strict=True)
        ],
        schema=GPU_SEGMENT_SCHEMA,
    )
    return {
        "rank_splits": rows_table(splits, RANK_SPLIT_SCHEMA),
        "gpu_segments": segments,
        "gpu_devices": rows_table(devices, GPU_DEVICE_SCHEMA),
    }
