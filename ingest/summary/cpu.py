"""CPU-side ranges (cpu ops and runtime calls) kept as columns, and what they answer.

Two questions need the CPU side: which CPU op launched a kernel (kernel -> runtime call by
correlation id -> innermost cpu_op on the runtime call's thread enclosing its start), and
what the CPU was doing when a GPU went idle. Both ask for the innermost op open on a thread
at a time, answered for every runtime call and question at once over the columns
(`ingest.summary.stab`: what a stack of open ops swept in time would hold on top).

Public surface: `CpuRanges`.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from operator import add

import numpy as np
from numpy.typing import NDArray

from ingest._columns import NONE, as_numpy, changes, filled
from ingest.events import Event, EventBlock
from ingest.summary.stab import Stack


class CpuRanges:
    """cpu_op and runtime ranges by thread; `launching_ops` and `context_at` after the feed."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self._name_ids: dict[str, int] = {}
        self._thread_ids: dict[object, int] = {}
        self.thread_rank: list[int] = []
        self.op_start, self.op_end = array("q"), array("q")
        self.op_name, self.op_thread = array("q"), array("q")
        self.rt_start, self.rt_end = array("q"), array("q")
        self.rt_name, self.rt_thread = array("q"), array("q")
        self.rt_corr, self.rt_rank = array("q"), array("q")
        op_columns = (self.op_start, self.op_end, self.op_name, self.op_thread)
        self._op_appends = tuple(column.append for column in op_columns)
        rt_columns = (
            self.rt_start, self.rt_end, self.rt_name, self.rt_thread, self.rt_corr, self.rt_rank
        )  # fmt: skip
        self._rt_appends = tuple(column.append for column in rt_columns)

    def _name_id(self, name: str) -> int:
        nid = self._name_ids[name] = len(self.names)
        self.names.append(name)
        return nid

    def _thread_id(self, rank: int | None, tid: int | None) -> int:
        """The id of a thread: `tid` alone without a rank, else (rank, tid)."""
        key: object = tid if rank is None else (rank, tid)
        thread = self._thread_ids.get(key)
        if thread is None:
            thread = self._thread_ids[key] = len(self.thread_rank)
            self.thread_rank.append(NONE if rank is None else rank)
        return thread

    def add_op(self, event: Event) -> None:
        """Keep one cpu_op range."""
        nid = self._name_ids.get(event.name)
        if nid is None:
            nid = self._name_id(event.name)
        thread = self._thread_ids.get(event.tid) if event.rank is None else None
        if thread is None:
            thread = self._thread_id(event.rank, event.tid)
        starts, ends, names, threads = self._op_appends
        start = event.start_ns
        starts(start)
        ends(start + event.dur_ns)
        names(nid)
        threads(thread)

    def add_runtime(self, event: Event) -> None:
        """Keep one runtime/driver call range with its correlation id."""
        nid = self._name_ids.get(event.name)
        if nid is None:
            nid = self._name_id(event.name)
        rank = event.rank
        thread = self._thread_ids.get(event.tid) if rank is None else None
        if thread is None:
            thread = self._thread_id(rank, event.tid)
        starts, ends, names, threads, corrs, ranks = self._rt_appends
        start = event.start_ns
        starts(start)
        ends(start + event.dur_ns)
        names(nid)
        threads(thread)
        value = event.correlation
        corrs(NONE if value is None else value)
        ranks(NONE if rank is None else rank)

    def add_op_block(self, block: EventBlock) -> None:
        """`add_op` for every row of a block, column by column (same ids, same order)."""
        names, threads = self._block_ids(block)
        self.op_start.extend(block.start_ns)
        self.op_end.extend(map(add, block.start_ns, block.dur_ns))
        self.op_name.extend(names)
        self.op_thread.extend(threads)

    def add_runtime_block(self, block: EventBlock) -> None:
        """`add_runtime` for every row of a block, column by column (same ids, same order)."""
        names, threads = self._block_ids(block)
        n = len(block)
        self.rt_start.extend(block.start_ns)
        self.rt_end.extend(map(add, block.start_ns, block.dur_ns))
        self.rt_name.extend(names)
        self.rt_thread.extend(threads)
        self.rt_corr.extend(filled(block.correlation, n))
        self.rt_rank.extend(filled(block.rank, n))

    def _block_ids(self, block: EventBlock) -> tuple[list[int], list[int]]:
        """Name and thread ids of a block's rows; new ones numbered in first-seen order, by
        the rules of `_name_id` and `_thread_id`."""
        names = block.name
        for name in dict.fromkeys(names):
            if name not in self._name_ids:
                self._name_id(name)
        tids = list(block.column(block.tid))
        ranks = block.rank
        keys: list[object] = tids
        if ranks is not None:
            if None in ranks:  # a mix of ranked and unranked rows: rare
                keys = [t if r is None else (r, t) for r, t in zip(ranks, tids, strict=True)]
            else:
                keys = list(zip(ranks, tids, strict=True))
        threads = self._thread_ids
        for key in dict.fromkeys(keys):
            if key not in threads:  # a key is (rank, tid), or tid alone without a rank
                rank, tid = key if isinstance(key, tuple) else (None, key)
                self._thread_id(rank, tid)
        return list(map(self._name_ids.__getitem__, names)), list(map(threads.__getitem__, keys))

    def sweep(
        self, questions: Sequence[tuple[int, int]]
    ) -> tuple[list[int], list[tuple[str | None, str | None]]]:
        """Launching ops of every runtime call, and the CPU context of each question.

        Args:
            questions: (rank or -1, time_ns) pairs.

        Returns:
            Per runtime call, the name id of the innermost cpu_op enclosing its start on its
            thread (-1 if none); per question, the names of the innermost cpu_op (latest
            start, any thread of that rank) and of the runtime call running at that time
            (the thread's latest call started by then, if it has not ended).
        """
        threads = len(self.thread_rank)
        starts, ends, thread = (as_numpy(c) for c in (self.op_start, self.op_end, self.op_thread))
        ops = Stack(starts, ends, thread, threads)
        op_name = as_numpy(self.op_name)
        rt_start, rt_thread = as_numpy(self.rt_start), as_numpy(self.rt_thread)
        inner = ops.innermost(rt_thread, rt_start)
        parents = _pick(op_name, inner).tolist()
        names = self.names
        op, rt = self._context(questions, ops, op_name)
        context = [
            (names[o] if o != NONE else None, names[r] if r != NONE else None)
            for o, r in zip(op, rt, strict=True)
        ]
        return parents, context

    def _context(
        self, questions: Sequence[tuple[int, int]], ops: Stack, op_name: NDArray[np.int64]
    ) -> tuple[list[int], list[int]]:
        """Per question, the name ids of the innermost op and of the running runtime call.
        Threads of the question's rank are tried in turn (those with runtime calls by their
        first call, then the others by id); a later thread wins only with a later start."""
        q_rank = np.asarray([r for r, _ in questions], dtype=np.int64)
        q_time = np.asarray([t for _, t in questions], dtype=np.int64)
        rt_thread = as_numpy(self.rt_thread)
        order = list(dict.fromkeys(rt_thread.tolist()))
        seen = set(order)
        order += [t for t in range(len(self.thread_rank)) if t not in seen]
        thread_rank = np.asarray(self.thread_rank, dtype=np.int64)
        pairs = [(t, np.flatnonzero(q_rank == thread_rank[t])) for t in order]
        thread = np.concatenate([np.full(len(q), t) for t, q in pairs] + [np.zeros(0, np.int64)])
        asked = np.concatenate([q for _, q in pairs] + [np.zeros(0, np.int64)])
        times = q_time[asked]
        op = ops.innermost(thread, times)
        op_start = as_numpy(self.op_start)
        best_op = _first_latest(asked, op >= 0, _pick(op_start, op), len(questions))
        op_of = _pick(op_name, _pick(op, best_op))
        rt = self._last_call(thread, times)
        rt_start, rt_end = as_numpy(self.rt_start), as_numpy(self.rt_end)
        running = (rt >= 0) & (_pick(rt_end, rt) > times)
        best_rt = _first_latest(asked, running, _pick(rt_start, rt), len(questions))
        rt_name = as_numpy(self.rt_name)
        rt_of = _pick(rt_name, _pick(rt, best_rt))
        return op_of.tolist(), rt_of.tolist()

    def _last_call(self, thread: NDArray[np.int64], times: NDArray[np.int64]) -> NDArray[np.int64]:
        """Per query, the thread's runtime call started last by its time (the latest index
        among equal starts), or -1."""
        rt_start, rt_thread = as_numpy(self.rt_start), as_numpy(self.rt_thread)
        order = np.lexsort((np.arange(len(rt_start)), rt_start, rt_thread))
        starts = rt_start[order]
        bounds = np.searchsorted(rt_thread[order], np.arange(len(self.thread_rank) + 1))
        out = np.full(len(times), -1, dtype=np.int64)
        for t in np.unique(thread).tolist():
            mine = np.flatnonzero(thread == t)
            a, b = bounds[t], bounds[t + 1]
            at = a + np.searchsorted(starts[a:b], times[mine], side="right") - 1
            hit = at >= a
            out[mine[hit]] = order[at[hit]]
        return out


def _pick(values: NDArray[np.int64], index: NDArray[np.int64]) -> NDArray[np.int64]:
    """`values[index]` where index >= 0, else -1."""
    out = np.full(len(index), NONE, dtype=np.int64)
    ok = index >= 0
    out[ok] = values[index[ok]]
    return out


def _first_latest(
    question: NDArray[np.int64], ok: NDArray[np.bool_], start: NDArray[np.int64], n: int
) -> NDArray[np.int64]:
    """Per question, the pair (index into the pairs, in thread order) with the latest start
    among those `ok`, the first on a tie; -1 if none."""
    out = np.full(n, -1, dtype=np.int64)
    rows = np.flatnonzero(ok)
    if not len(rows):
        return out
    order = rows[np.lexsort((rows, -start[rows], question[rows]))]
    first = np.flatnonzero(changes(question[order]))
    out[question[order][first]] = order[first]
    return out
