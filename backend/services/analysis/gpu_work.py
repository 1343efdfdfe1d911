"""A trace's GPU work as columns, and the exclusive time split of any window of it.

Every kernel, memcpy and memset is read once from an events file (at ingest, `gpu_derive`)
with its rank, device and category; `split_window` then sweeps the part of them inside
[lo, hi) with the summary's own sweep (`ingest.summary.timesplit.split_device`), so a
rank and the Overview split time the same way: compute first, then communication, memcpy,
memset; the rest of the window is idle.

Public surface: `GpuWork`, `load_gpu_work`, `split_window`, `ready`.
"""

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
from numpy.typing import NDArray
from sqlmodel import Session

from backend.models import Trace, TraceStatus
from backend.services.datasets import arrow_of_file
from backend.services.errors import InvalidInputError
from backend.services.traces import get_trace
from ingest.classify import copy_kind, is_communication_name
from ingest.summary.shape import TimeSplit
from ingest.summary.timesplit import Category, split_device

NO_RANK = -1  # the rank column of events without one (single-process traces); device too
_HOST = {"HtoD", "DtoH"}
_SQL = (
    "SELECT COALESCE(rank, -1) AS rank, COALESCE(device, -1) AS device, kind, name, "
    "start_ns, start_ns + dur_ns AS end_ns, "
    "kind = 'kernel' AND args IS NOT NULL AND args LIKE '%\"Collective name\"%' AS collective "
    "FROM {events} WHERE kind IN ('kernel', 'memcpy', 'memset') "
    "AND rank IS NOT DISTINCT FROM ? ORDER BY start_ns, id"
)


@dataclass
class GpuWork:
    """Columns of every GPU interval, in start order (rank `NO_RANK` when none)."""

    rank: NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))
    device: NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))
    category: NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))
    start: NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))
    end: NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))

    def of(self, rank: int | None, device: int | None = None) -> "GpuWork":
        """The intervals of one rank (None: events without a rank), optionally one device."""
        mask = self.rank == (NO_RANK if rank is None else rank)
        if device is not None:
            mask &= self.device == device
        return GpuWork(self.rank[mask], self.device[mask], self.category[mask],
                       self.start[mask], self.end[mask])  # fmt: skip

    def devices(self) -> list[int]:
        """The devices these intervals ran on, ascending (-1: unknown)."""
        return sorted(set(self.device.tolist()))


def ready(session: Session, trace_id: str) -> Trace:
    """The trace, which must be ready: its events are stored only then.

    Raises:
        NotFoundError: no such trace. InvalidInputError: it is not ready.
    """
    trace = get_trace(session=session, trace_id=trace_id)
    if trace.status != TraceStatus.READY:
        raise InvalidInputError(f"trace {trace_id} is {trace.status}, not ready")
    return trace


def _category(key: str) -> int:
    """The time-split category of a (kind, name) key (`kind` NUL `name`)."""
    kind, _, name = key.partition("\0")
    if kind == "memset":
        return Category.MEMSET
    if kind == "memcpy":
        return Category.COPY_HOST if copy_kind(name).kind in _HOST else Category.COPY_OTHER
    return Category.COMMUNICATION if is_communication_name(name) else Category.COMPUTE


def load_gpu_work(events: Path, rank: int | None) -> GpuWork:
    """Every kernel, memcpy and memset of one rank in one events file, as columns (Arrow
    from DuckDB, no Python object per event; one category lookup per distinct name)."""
    quoted = str(events).replace("'", "''")
    table = arrow_of_file(events, _SQL.replace("{events}", f"read_parquet('{quoted}')"), [rank])
    if table.num_rows == 0:
        return GpuWork()
    key = pc.binary_join_element_wise(table["kind"], table["name"], "\0")
    keys = pc.dictionary_encode(key).combine_chunks()
    per_key = np.array([_category(k) for k in keys.dictionary.to_pylist()], dtype=np.int64)
    category = per_key[keys.indices.to_numpy(zero_copy_only=False)]
    collective = table["collective"].to_numpy(zero_copy_only=False).astype(bool)
    category[collective] = Category.COMMUNICATION

    def column(name: str) -> NDArray[np.int64]:
        return np.asarray(table[name].to_numpy(zero_copy_only=False), dtype=np.int64)

    return GpuWork(column("rank"), column("device"), category, column("start_ns"),
                   column("end_ns"))  # fmt: skip


def split_window(work: GpuWork, lo: int, hi: int) -> TimeSplit:
    """How the GPU spent [lo, hi): the parts of the intervals inside it, swept once."""
    inside = (work.end > lo) & (work.start < hi)
    starts = np.maximum(work.start[inside], lo) - lo
    ends = np.minimum(work.end[inside], hi) - lo
    split, _ = split_device(starts, ends, work.category[inside], max(hi - lo, 0), 1)
    return split
