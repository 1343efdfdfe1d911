"""CPU time by Python call stack (`with_stack`) and by nn.Module (`with_modules`).

torch writes a `python_function` event per Python frame it saw (stored as kind `python`);
frames nest by time on their thread like ops do, so a frame's stack is the path of frames
around it. The stack tree sums every frame's duration by path, with the outermost ops
called from a frame as leaves, so an icicle chart shows where CPU time went from the
script down to the op. The module tree keeps only the `nn.Module: <name>` frames, so it
is the model's module hierarchy with the time spent in each module.

Torch's own `group_by_stack_n` reads the `Call stack` recorded on each op in memory; the
trace file's `Call stack` arg is not kept at ingest, so the frames are the source here.

Public surface: `compute_stacks`.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby

from sqlmodel import Session

from backend.models import Trace
from backend.models.operators import OperatorStacksPublic, StackNode, StackTree
from backend.services.analysis.stored import read_events
from backend.services.traces import get_trace

MODULE_PREFIX = "nn.Module: "
_SQL = """
SELECT kind, name, start_ns, dur_ns, rank, pid, tid FROM {events}
WHERE kind IN ('python', 'cpu_op')
ORDER BY rank NULLS FIRST, pid NULLS FIRST, tid NULLS FIRST, start_ns, start_ns + dur_ns DESC, id
"""


@dataclass(slots=True)
class _Agg:
    """One path of the tree, summed over its occurrences."""

    name: str
    depth: int
    parent: tuple[str, ...] | None
    total: int = 0
    count: int = 0
    child_total: int = 0


Row = tuple[str, str, int, int]  # kind, name, start, dur


def _paths(rows: list[Row], modules: bool) -> list[tuple[tuple[str, ...], int]]:
    """(path, duration) of every frame kept, nested by torch's rule on one thread.

    Stack tree: Python frames, and ops whose nearest enclosing kept event is a frame.
    Module tree: only `nn.Module:` frames."""
    out: list[tuple[tuple[str, ...], int]] = []
    open_: list[tuple[int, str, tuple[str, ...]]] = []  # end, kind, path
    for kind, name, start, dur in rows:
        end = start + dur
        if modules and (kind != "python" or not name.startswith(MODULE_PREFIX)):
            continue
        while open_ and (start >= open_[-1][0] or end > open_[-1][0]):
            open_.pop()
        if kind == "cpu_op" and (not open_ or open_[-1][1] != "python"):
            # a nested op, or one outside Python: not drawn; what it encloses hangs above it
            open_.append((end, kind, open_[-1][2] if open_ else ()))
            continue
        label = name.removeprefix(MODULE_PREFIX) if modules else name
        path = (open_[-1][2] if open_ else ()) + (label,)
        out.append((path, dur))
        open_.append((end, kind, path))
    return out


def _tree(threads: list[list[Row]], modules: bool, max_nodes: int, reason: str | None) -> StackTree:
    if reason:
        return StackTree(nodes=[], reason=reason)
    aggs: dict[tuple[str, ...], _Agg] = {}
    for rows in threads:
        for path, dur in _paths(rows, modules):
            agg = aggs.setdefault(path, _Agg(path[-1], len(path), path[:-1] or None))
            agg.total += dur
            agg.count += 1
            if agg.parent is not None:
                aggs[agg.parent].child_total += dur
    ranked = sorted(aggs.items(), key=lambda kv: (-kv[1].total, kv[1].depth, kv[0]))
    kept = ranked[:max_nodes]
    ids = {path: f"n{i}" for i, (path, _) in enumerate(kept)}
    nodes = [
        StackNode(
            id=ids[path],
            parent=ids.get(a.parent, "") if a.parent else "",
            name=a.name,
            total_ns=a.total,
            self_ns=a.total - a.child_total,
            count=a.count,
        )
        for path, a in kept
    ]
    return StackTree(nodes=nodes, truncated=len(ranked) > max_nodes)


def _threads(trace: Trace) -> list[list[Row]]:
    rows = read_events(trace, _SQL)
    return [[r[:4] for r in g] for _, g in groupby(rows, key=lambda r: (r[4], r[5], r[6]))]


def compute_stacks(
    *, session: Session, trace_id: str, max_nodes: int = 2000
) -> OperatorStacksPublic:
    """The stack and module trees of one trace; each empty with a reason when the trace
    was recorded without `with_stack` / `with_modules`.

    Raises:
        NotFoundError: no such trace, or a ready trace without stored events.
    """
    trace = get_trace(session=session, trace_id=trace_id)
    threads = _threads(trace)
    frames = [r for rows in threads for r in rows if r[0] == "python"]
    has_modules = any(r[1].startswith(MODULE_PREFIX) for r in frames)
    no_stack = None if frames else "no python_function events: recorded without with_stack=True"
    no_modules = (
        None if has_modules else "no `nn.Module:` frames: recorded without with_modules=True"
    )
    return OperatorStacksPublic(
        trace_id=trace_id,
        stacks=_tree(threads, False, max_nodes, no_stack),
        modules=_tree(threads, True, max_nodes, no_modules),
    )
