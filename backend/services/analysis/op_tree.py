"""CPU events nested into per-thread trees, with the GPU work each operator launched.

torch's `key_averages()` (torch/autograd/profiler_util.py) builds the same tree:
`EventList._populate_cpu_children` sorts a thread's synchronous CPU events by (start,
-end) and makes each the child of the innermost open event that contains it. Its CPU
events are operators (`cpu_op`), `record_function` ranges (`annotation`) and the CUDA
runtime/driver calls (`runtime`), so an op's self CPU time excludes its runtime calls as
well as its child ops. GPU work (kernels, memcpy, memset) is linked to the op through
the CUPTI external correlation, which is the innermost `cpu_op` open when the launching
runtime call ran: here, the runtime call found by correlation (`LAUNCHED_BY`, the rule of
`backend.services.timeline.launch`) and its innermost enclosing `cpu_op` on the thread.
`record_function` ranges push no external correlation (a memset called through ctypes
inside one carries no `External id`), so GPU work reaches them only through child ops.
Python frames (`with_stack`'s `python_function` events) are not in torch's tree: its
key_averages has no row for them, and an op's parent is the op or range around it even
where frames sit between (tests/data/torch/h200_ops_stack: `ProfilerStep*` self CPU time
equals torch's only with the frames left out), so they are left out here too.

Two more steps of torch's: a few utility ops never become events (`_filter_name`: they
are dropped here, so their time stays in the parent's self time), and an event whose only
child has its own name absorbs that child (`EventList._remove_dup_nodes`: `aten::sum`
calling `aten::sum` counts once, with the inner call's children and GPU work).

Public surface: `Node`, `Launched`, `build_forest`, `walk`, `op_name`, `no_gc_pauses`,
`TREE_KINDS`.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path
from typing import Any

from backend.services.analysis.stored import read_events_file
from backend.services.timeline import GPU_WORK, LAUNCHED_BY

TREE_KINDS = ("cpu_op", "annotation", "runtime")
# torch.autograd.profiler_util._filter_name: names torch makes no event of.
FILTERED = (
    "[memory]",
    "[OutOfMemory]",
    "profiler::_record_function_enter",
    "profiler::_record_function_enter_new",
    "profiler::_record_function_exit",
    "aten::is_leaf",
    "aten::output_nr",
    "aten::_version",
)
_STEP = re.compile(r"^ProfilerStep#\d+$")  # torch folds these into one `ProfilerStep*` row


@dataclass(slots=True)
class Launched:
    """One GPU event, as the op tree needs it."""

    kind: str
    name: str
    dur_ns: int


@dataclass(slots=True, eq=False)
class Node:
    """One CPU event in its thread's tree."""

    id: int
    kind: str
    name: str
    start_ns: int
    end_ns: int
    shapes: str | None
    stack: tuple[str, ...] | None = None  # the Python frames around it (with_stack), outer first
    children: list[Node] = field(default_factory=list)
    gpu: list[Launched] = field(default_factory=list)  # launched directly (device self)
    device_total_ns: int = 0
    device_self_ns: int = 0  # the GPU work in `gpu`, summed by `_device_totals`

    @property
    def cpu_total_ns(self) -> int:
        return self.end_ns - self.start_ns

    @property
    def cpu_self_ns(self) -> int:
        return self.cpu_total_ns - sum(c.cpu_total_ns for c in self.children)


@contextmanager
def no_gc_pauses() -> Iterator[None]:
    """The cyclic collector off while a tree is built: a 250k-event trace makes ~100k
    nodes, which set off generation-2 collections that took 80% of the time (2.0 s of
    2.4 s for `_nest` alone). Nodes hold no cycles (no parent links), so refcounting
    frees them all without the collector."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def op_name(name: str) -> str:
    """The name key_averages groups under (`ProfilerStep#3` -> `ProfilerStep*`)."""
    return "ProfilerStep*" if name.startswith("ProfilerStep#") and _STEP.match(name) else name


_NODES_SQL = f"""
SELECT id, kind, name, start_ns, dur_ns, rank, pid, tid,
       CASE WHEN kind = 'cpu_op' THEN args ->> '$."Input Dims"' END
FROM {{events}}
WHERE ((kind IN {TREE_KINDS} AND name NOT IN {FILTERED}) OR kind = 'python')
  AND rank IS NOT DISTINCT FROM ?
ORDER BY rank NULLS FIRST, pid NULLS FIRST, tid NULLS FIRST, start_ns, start_ns + dur_ns DESC, id
"""
_GPU_SQL = f"""
SELECT c.id, g.kind, g.name, g.dur_ns FROM {{events}} AS g JOIN {{events}} AS c ON {LAUNCHED_BY}
WHERE g.kind IN {GPU_WORK} AND g.correlation IS NOT NULL
  AND c.rank IS NOT DISTINCT FROM ? AND (g.rank IS NULL OR g.rank = ?)
"""


def _nest(rows: list[tuple[Any, ...]]) -> tuple[list[Node], dict[int, Node]]:
    """One thread's events (sorted by start, then end descending) as a forest, torch's
    rule: a child starts before its parent ends and does not end after it. Also maps
    each runtime call to its innermost enclosing cpu_op. Python frames nest by the same
    rule on a stack of their own: they give each op its call stack, not a parent."""
    roots: list[Node] = []
    open_: list[Node] = []
    frames: list[tuple[int, tuple[str, ...]]] = []  # (end, path) of the open frames
    owner: dict[int, Node] = {}
    for id_, kind, name, start, dur, *_rest, shapes in rows:
        end = start + dur
        while frames and start >= frames[-1][0]:  # frames that have ended
            frames.pop()
        if kind == "python":
            while frames and end > frames[-1][0]:  # torch's rule for a frame's parent
                frames.pop()
            frames.append((end, (frames[-1][1] if frames else ()) + (name,)))
            continue
        node = Node(id_, kind, op_name(name), start, end, shapes)
        if kind == "cpu_op":  # the innermost frame that holds the whole call
            node.stack = next((path for f_end, path in reversed(frames) if end <= f_end), None)
        while open_ and (start >= open_[-1].end_ns or end > open_[-1].end_ns):
            open_.pop()
        (open_[-1].children if open_ else roots).append(node)
        if kind == "runtime":
            op = next((n for n in reversed(open_) if n.kind == "cpu_op"), None)
            if op is not None:
                owner[id_] = op
        open_.append(node)
    return roots, owner


def _absorb_same_name_child(node: Node) -> None:
    """torch's `_remove_dup_nodes`: while the node's only child has its name, the child
    goes and its children and GPU work become the node's (the node keeps its times)."""
    while len(node.children) == 1 and node.children[0].name == node.name:
        child = node.children[0]
        node.children, node.gpu = child.children, child.gpu


def _device_totals(preorder: list[Node]) -> None:
    """Fill `device_self_ns` (own launches) and `device_total_ns` (plus the children's
    totals): in reverse preorder every child comes before its parent."""
    for n in reversed(preorder):
        n.device_self_ns = sum(g.dur_ns for g in n.gpu) if n.gpu else 0
        n.device_total_ns = n.device_self_ns + sum(c.device_total_ns for c in n.children)


def build_forest(events: Path, rank: int | None) -> list[Node]:
    """Every thread's tree of CPU events of one rank, GPU work attached to the op that
    launched it. One rank at a time, so a job's trees are never all held at once: a GPU
    event and the runtime call that launched it are always of the same rank.

    Args:
        events: a dataset's events file.
        rank: the rank (None: the events without one).

    Returns:
        The roots of the rank's threads (processes and threads kept apart).
    """
    rows = read_events_file(events, _NODES_SQL, [rank])
    roots: list[Node] = []
    owner: dict[int, Node] = {}
    for _thread, group in groupby(rows, key=lambda r: (r[5], r[6], r[7])):
        thread_roots, thread_owner = _nest(list(group))
        roots.extend(thread_roots)
        owner.update(thread_owner)
    if owner:
        for call_id, kind, name, dur in read_events_file(events, _GPU_SQL, [rank, rank]):
            if (op := owner.get(call_id)) is not None:
                op.gpu.append(Launched(kind, name, dur))
    nodes = walk(roots)
    for node in nodes:
        _absorb_same_name_child(node)
    # an absorbed child stays in `nodes`, after its parent, whose children it now shares
    _device_totals(nodes)
    return roots


def walk(roots: list[Node]) -> list[Node]:
    """Every node of the forest, parents before children."""
    out: list[Node] = []
    stack = list(reversed(roots))
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(reversed(n.children))
    return out
