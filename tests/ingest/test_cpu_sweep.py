"""`CpuRanges.sweep` (numpy: `ingest.summary.stab`) answers what the stack sweep it
replaced answers. The reference below is that sweep, verbatim but for being functions:
per thread, ops sorted by start (enclosing first), probes (runtime call starts and
questions) in time order, a stack of open ops. Random threads on several ranks with
nested, partly overlapping, equal and zero-length ops, runtime calls at op boundaries, and
questions at ties between threads.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest

from ingest._columns import NONE
from ingest.events import Event, EventKind
from ingest.summary.cpu import CpuRanges

_EARLIEST = -(1 << 62)
Probe = tuple[int, int, int]


def _reference(
    self: CpuRanges, questions: Sequence[tuple[int, int]]
) -> tuple[list[int], list[tuple[str | None, str | None]]]:
    """The stack sweep `CpuRanges.sweep` replaced (verbatim but for names).

    Args:
        questions: (rank or -1, time_ns) pairs.

    Returns:
        Per runtime call, the name id of the innermost cpu_op enclosing its start on its
        thread (-1 if none); per question, the names of the innermost cpu_op (latest
        start, any thread of that rank) and of the runtime call running at that time.
    """
    parents = [NONE] * len(self.rt_start)
    best: list[list[int]] = [[_EARLIEST, NONE, _EARLIEST, NONE] for _ in questions]
    ops, probes = _by_thread(self, questions)
    for thread, thread_probes in probes.items():
        _sweep_thread(self, ops.get(thread, []), thread_probes, parents, best)
    names = self.names
    context = [
        (names[op] if op != NONE else None, names[rt] if rt != NONE else None)
        for _, op, _, rt in best
    ]
    return parents, context


def _by_thread(
    self: CpuRanges, questions: Sequence[tuple[int, int]]
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
    self: CpuRanges, ops: list[int], probes: list[Probe], parents: list[int], best: list[list[int]]
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


def _ranges(rng: random.Random) -> tuple[CpuRanges, list[tuple[int, int]]]:
    cpu = CpuRanges()
    horizon = rng.choice((10, 50, 400))
    ranks = rng.choice(([None], [0, 1]))
    tids = list(range(1, rng.randint(1, 4) + 1))
    events: list[Event] = []
    for _ in range(rng.randint(0, 60)):
        start = rng.randint(0, horizon)
        dur = rng.choice((0, 1, 2, rng.randint(0, horizon)))
        rank, tid = rng.choice(ranks), rng.choice(tids)
        name = rng.choice(("aten::mm", "aten::add", "Optimizer.step", "x"))
        events.append(Event(EventKind.CPU_OP, name, start, dur, pid=1, tid=tid, rank=rank))
        if rng.random() < 0.3:  # nested inside it, sometimes sharing its start
            inner = rng.choice((start, start + rng.randint(0, max(dur, 0))))
            end = rng.randint(inner, max(start + dur, inner))
            events.append(
                Event(EventKind.CPU_OP, "aten::copy_", inner, end - inner, tid=tid, rank=rank)
            )
    for _ in range(rng.randint(0, 40)):
        start = rng.randint(0, horizon)
        rank, tid = rng.choice(ranks), rng.choice([*tids, 99])
        name = rng.choice(("cudaLaunchKernel", "cudaStreamSynchronize"))
        events.append(Event(EventKind.RUNTIME, name, start, rng.randint(0, 20), tid=tid, rank=rank))
    rng.shuffle(events)
    for e in events:
        (cpu.add_op if e.kind is EventKind.CPU_OP else cpu.add_runtime)(e)
    questions = [
        (rng.choice([NONE if r is None else r for r in ranks]), rng.randint(0, horizon))
        for _ in range(rng.randint(0, 30))
    ]
    return cpu, questions


@pytest.mark.parametrize("seed", range(400))
def test_sweep_is_the_stack_sweep(seed: int) -> None:
    cpu, questions = _ranges(random.Random(seed))
    assert cpu.sweep(questions) == _reference(cpu, questions)
