"""CPU-side ranges (cpu ops and runtime calls) kept as columns, and what they answer.

Two questions need the CPU side: which CPU op launched a kernel (kernel -> runtime call by
correlation id -> innermost cpu_op on the runtime call's thread enclosing its start), and
what the CPU was doing when a GPU went idle. Both are answered by one sweep per thread over
the ranges sorted by start, with a stack of open ops, so the cost is a sort, not a search
per question.

Public surface: `CpuRanges`.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from operator import add

from ingest._columns import NONE, filled
from ingest.events import Event, EventBlock

_EARLIEST = -(1 << 62)  # below any start, so the first candidate always wins

Probe = tuple[int, int, int]  # (time, 0 = runtime call / 1 = question, index)


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
        rows = zip(keys, zip(block.column(ranks), tids, strict=True), strict=True)
        for key, (rank, tid) in dict(rows).items():
            if key not in threads:
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
            start, any thread of that rank) and of the runtime call running at that time.
        """
        parents = [NONE] * len(self.rt_start)
        best: list[list[int]] = [[_EARLIEST, NONE, _EARLIEST, NONE] for _ in questions]
        ops, probes = self._by_thread(questions)
        for thread, thread_probes in probes.items():
            self._sweep_thread(ops.get(thread, []), thread_probes, parents, best)
        names = self.names
        context = [
            (names[op] if op != NONE else None, names[rt] if rt != NONE else None)
            for _, op, _, rt in best
        ]
        return parents, context

    def _by_thread(
        self, questions: Sequence[tuple[int, int]]
    ) -> tuple[dict[int, list[int]], dict[int, list[Probe]]]:
        ops: dict[int, list[int]] = {}
        for i, thread in enumerate(self.op_thread):
            ops.setdefault(thread, []).append(i)
        start, end = self.op_start, self.op_end
        for indices in ops.values():  # enclosing op first when two start together
            indices.sort(key=end.__getitem__, reverse=True)
            indices.sort(key=start.__getitem__)
        probes: dict[int, list[Probe]] = {}
        for i, (thread, t) in enumerate(zip(self.rt_thread, self.rt_start, strict=True)):
            probes.setdefault(thread, []).append((t, 0, i))
        for thread, rank in enumerate(self.thread_rank):
            asked = [(t, 1, q) for q, (r, t) in enumerate(questions) if r == rank]
            if asked:
                probes.setdefault(thread, []).extend(asked)
        for thread_probes in probes.values():
            thread_probes.sort()
        return ops, probes

    def _sweep_thread(
        self, ops: list[int], probes: list[Probe], parents: list[int], best: list[list[int]]
    ) -> None:
        op_start, op_end, op_name = self.op_start, self.op_end, self.op_name
        rt_end, rt_name = self.rt_end, self.rt_name
        open_end: list[int] = []
        open_op: list[int] = []
        last_rt = NONE
        j, n = 0, len(ops)
        for t, what, index in probes:
            while j < n and op_start[ops[j]] <= t:
                o = ops[j]
                while open_end and open_end[-1] <= op_start[o]:
                    open_end.pop(), open_op.pop()
                open_end.append(op_end[o])
                open_op.append(o)
                j += 1
            while open_end and open_end[-1] <= t:
                open_end.pop(), open_op.pop()
            inner = open_op[-1] if open_op else NONE
            if what == 0:
                parents[index] = op_name[inner] if inner != NONE else NONE
                last_rt = index
                continue
            slot = best[index]
            if inner != NONE and op_start[inner] > slot[0]:
                slot[0], slot[1] = op_start[inner], op_name[inner]
            if last_rt != NONE and rt_end[last_rt] > t and self.rt_start[last_rt] > slot[2]:
                slot[2], slot[3] = self.rt_start[last_rt], rt_name[last_rt]
