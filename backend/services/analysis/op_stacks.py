"""CPU time by Python call stack (`with_stack`) and by nn.Module (`with_modules`).

torch writes a `python_function` event per Python frame it saw (stored as kind `python`);
frames nest by time on their thread like ops do, so a frame's stack is the path of frames
around it. The stack tree sums every frame's duration by path, with the outermost ops
called from a frame as leaves, so an icicle chart shows where CPU time went from the
script down to the op. The module tree keeps only the `nn.Module: <name>` frames, so it
is the model's module hierarchy with the time spent in each module.

Both trees are summed by path once at ingest (`stack_tree`); a request sums the parts'
rows by path with DuckDB and keeps the largest.

Torch's own `group_by_stack_n` reads the `Call stack` recorded on each op in memory; the
trace file's `Call stack` arg is not kept at ingest, so the frames are the source here.

Public surface: `compute_stacks`.
"""

from __future__ import annotations

from typing import Any

from sqlmodel import Session

from backend.models.operators import OperatorStacksPublic, StackNode, StackTree
from backend.services.analysis.derived import query_derived
from backend.services.traces import get_trace

# Paths summed over the parts, largest first (then shallower, then by path); one more than
# asked for says whether the tree was cut.
_READ = """
SELECT path, sum(total_ns)::BIGINT AS total, sum(count)::BIGINT, sum(child_total_ns)::BIGINT
FROM {stack_tree} WHERE tree = ? GROUP BY path
ORDER BY total DESC, len(path), path LIMIT ?
"""


def _tree(rows: list[tuple[Any, ...]], max_nodes: int, reason: str | None) -> StackTree:
    if reason:
        return StackTree(nodes=[], reason=reason)
    kept = [(tuple(path), total, count, child) for path, total, count, child in rows[:max_nodes]]
    ids = {path: f"n{i}" for i, (path, *_) in enumerate(kept)}
    nodes = [
        StackNode(
            id=ids[path],
            parent=ids.get(path[:-1], "") if len(path) > 1 else "",
            name=path[-1],
            total_ns=total,
            self_ns=total - child,
            count=count,
        )
        for path, total, count, child in kept
    ]
    return StackTree(nodes=nodes, truncated=len(rows) > max_nodes)


def compute_stacks(
    *, session: Session, trace_id: str, max_nodes: int = 2000
) -> OperatorStacksPublic:
    """The stack and module trees of one trace; each empty with a reason when the trace
    was recorded without `with_stack` / `with_modules`.

    Raises:
        NotFoundError: no such trace, or a ready trace without stored events.
    """
    trace = get_trace(session=session, trace_id=trace_id)
    stacks = query_derived(trace, _READ, ["stacks", max_nodes + 1])
    modules = query_derived(trace, _READ, ["modules", max_nodes + 1])
    no_stack = None if stacks else "no python_function events: recorded without with_stack=True"
    no_modules = None if modules else "no `nn.Module:` frames: recorded without with_modules=True"
    return OperatorStacksPublic(
        trace_id=trace_id,
        stacks=_tree(stacks, max_nodes, no_stack),
        modules=_tree(modules, max_nodes, no_modules),
    )
