"""The Operators view: torch's `key_averages()` recomputed from the stored events.

Per op name (or name and input shapes): calls, CPU total and self time, device total and
self time, and the GPU work each op launched (`op_tree` says how ops nest and how GPU work
is linked). Definitions are torch's (`FunctionEvent` in torch/autograd/profiler_util.py):

- cpu_total: the op's duration; cpu_self: minus its direct children's durations (child
  ops, record_function ranges and CUDA runtime calls).
- device_total: GPU work the op launched plus its children's device_total; device_self:
  the GPU work it launched directly (not through a child op).
- Rows sum every call, so an op nested in an op of the same name counts twice, as in torch.
- call_stacks (traces recorded `with_stack`): the Python frames around the op's calls, the
  three that account for the most CPU time, outermost frame first.

What a trace file cannot give back: torch groups by `node_id` and `is_async` too (threads
of other nodes and async events, both absent from these traces), folds `ProfilerStep#N`
into `ProfilerStep*` (done here), and groups by stack only from in-memory events.

Public surface: `compute_operators`.
"""

from dataclasses import dataclass, field

from sqlmodel import Session

from backend.models import Trace
from backend.models.operators import (
    OperatorCallStack,
    OperatorKernel,
    OperatorPublic,
    OperatorSort,
    OperatorsPublic,
)
from backend.services.analysis.op_tree import Node, build_forest, no_gc_pauses
from backend.services.analysis.stored import read_events
from backend.services.traces import get_trace

LISTED_KINDS = ("cpu_op", "annotation")
TOP_KERNELS = 10
TOP_STACKS = 3


@dataclass(slots=True)
class _Row:
    kind: str
    count: int = 0
    cpu_total: int = 0
    cpu_self: int = 0
    device_total: int = 0
    device_self: int = 0
    kernels: dict[str, list[int | str]] = field(default_factory=dict)
    stacks: dict[tuple[str, ...], list[int]] = field(default_factory=dict)  # [count, cpu ns]


Key = tuple[str, str | None]


def _aggregate(roots: list[Node], group: str, needle: str) -> dict[Key, _Row]:
    """One row per key, summing every call; each GPU event is added to the kernels of
    every listed op around it (so, like device_total, once per enclosing call)."""
    rows: dict[Key, _Row] = {}
    stack: list[tuple[Node, tuple[_Row, ...]]] = [(r, ()) for r in reversed(roots)]
    while stack:
        node, above = stack.pop()
        if node.kind in LISTED_KINDS and needle in node.name.casefold():
            key = (node.name, node.shapes if group == "shape" else None)
            row = rows.setdefault(key, _Row(kind=node.kind))
            row.count += 1
            row.cpu_total += node.cpu_total_ns
            row.cpu_self += node.cpu_self_ns
            row.device_total += node.device_total_ns
            row.device_self += node.device_self_ns
            if node.stack is not None:
                site = row.stacks.setdefault(node.stack, [0, 0])
                site[0] += 1
                site[1] += node.cpu_total_ns
            above = (*above, row)
        for g in node.gpu:
            for r in above:
                k = r.kernels.setdefault(g.name, [0, 0, g.kind])
                k[0] = int(k[0]) + 1
                k[1] = int(k[1]) + g.dur_ns
        stack.extend((c, above) for c in reversed(node.children))
    return rows


def _public(key: Key, row: _Row) -> OperatorPublic:
    kernels = sorted(row.kernels.items(), key=lambda kv: (-int(kv[1][1]), kv[0]))
    return OperatorPublic(
        name=key[0],
        kind=row.kind,
        input_shapes=key[1],
        count=row.count,
        cpu_total_ns=row.cpu_total,
        cpu_self_ns=row.cpu_self,
        device_total_ns=row.device_total,
        device_self_ns=row.device_self,
        cpu_avg_ns=row.cpu_total // row.count,
        device_avg_ns=row.device_total // row.count,
        kernels=[
            OperatorKernel(name=name, kind=str(v[2]), count=int(v[0]), total_ns=int(v[1]))
            for name, v in kernels[:TOP_KERNELS]
        ],
        call_stacks=[
            OperatorCallStack(frames=list(path), count=v[0], cpu_total_ns=v[1])
            for path, v in sorted(row.stacks.items(), key=lambda kv: (-kv[1][1], kv[0]))[
                :TOP_STACKS
            ]
        ],
    )


def _python_flags(trace: Trace) -> tuple[bool, bool]:
    """Whether the trace has Python frames (with_stack) and module frames (with_modules)."""
    rows = read_events(
        trace,
        "SELECT count(*), count(*) FILTER (WHERE starts_with(name, 'nn.Module: ')) "
        "FROM {events} WHERE kind = 'python'",
    )
    stacks, modules = rows[0] if rows else (0, 0)
    return bool(stacks), bool(modules)


def compute_operators(
    *,
    session: Session,
    trace_id: str,
    limit: int = 100,
    sort: OperatorSort = "device_total_ns",
    descending: bool = True,
    q: str = "",
    group: str = "name",
) -> OperatorsPublic:
    """Per-op totals of one trace, as key_averages(group_by_input_shape=group == "shape").

    Args:
        session: the database session.
        trace_id: the trace.
        limit: the most rows returned.
        sort: the field sorted by; ties by name.
        descending: largest first (names: Z to A).
        q: keep names containing this text (case-insensitive).
        group: "name", or "shape" for one row per name and input shapes.

    Raises:
        NotFoundError: no such trace, or a ready trace without stored events.
    """
    trace = get_trace(session=session, trace_id=trace_id)
    with no_gc_pauses():
        rows = _aggregate(build_forest(trace), group, q.casefold())
    items = [_public(k, r) for k, r in rows.items()]
    if sort == "name":
        items.sort(key=lambda i: (i.name, i.input_shapes or ""), reverse=descending)
    else:
        items.sort(key=lambda i: (i.name, i.input_shapes or ""))
        items.sort(key=lambda i: getattr(i, sort), reverse=descending)
    stacks, modules = _python_flags(trace)
    return OperatorsPublic(
        trace_id=trace_id,
        group="shape" if group == "shape" else "name",
        sort=sort,
        count=len(items),
        items=items[:limit],
        has_stacks=stacks,
        has_modules=modules,
    )
