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

The per-call work (walking the op tree) is done once at ingest (`op_derive`), per rank,
name and input shapes; a request sums those rows over ranks, parts and, for
`group=name`, shapes with DuckDB (exact: every field is a sum), then fetches the kernels
and call stacks of the rows it returns only.

Public surface: `compute_operators`.
"""

from typing import Any

from sqlmodel import Session

from backend.models import Trace
from backend.models.operators import (
    OperatorCallStack,
    OperatorKernel,
    OperatorPublic,
    OperatorSort,
    OperatorsPublic,
)
from backend.services.analysis.derived import query_derived
from backend.services.traces import get_trace

TOP_KERNELS = 10
TOP_STACKS = 3
FIELDS = ("count", "cpu_total_ns", "cpu_self_ns", "device_total_ns", "device_self_ns")
_SUMS = ", ".join(f"sum({f})::BIGINT" for f in FIELDS)
# {shapes}: `input_shapes` (group=shape) or `NULL::VARCHAR` (group=name); a key's kind is
# its first call's, in the walk over the whole trace.
_ROWS = (
    "SELECT name, {shapes} AS shapes, arg_min(kind, first_ord), "
    + _SUMS
    + """
FROM {operators} GROUP BY name, shapes"""
)
_KERNELS = """
SELECT name, {shapes} AS shapes, kernel, arg_min(kind, first_ord), sum(count)::BIGINT,
       sum(total_ns)::BIGINT AS total
FROM {op_kernels} WHERE list_contains(?::VARCHAR[], name) GROUP BY name, shapes, kernel
QUALIFY row_number() OVER (PARTITION BY name, shapes ORDER BY total DESC, kernel) <= ?
"""
_STACKS = """
SELECT name, {shapes} AS shapes, frames, sum(count)::BIGINT, sum(cpu_total_ns)::BIGINT AS cpu
FROM {op_call_stacks} WHERE list_contains(?::VARCHAR[], name) GROUP BY name, shapes, frames
QUALIFY row_number() OVER (PARTITION BY name, shapes ORDER BY cpu DESC, frames) <= ?
"""
_FLAGS = """
SELECT count(*) FILTER (WHERE tree = 'stacks'), count(*) FILTER (WHERE tree = 'modules')
FROM {stack_tree}
"""

Key = tuple[str, str | None]
Row = tuple[Any, ...]  # name, shapes, kind, then FIELDS


def _sorted(rows: list[Row], sort: OperatorSort, descending: bool) -> list[Row]:
    """Sorted by `sort`, ties by name and shapes (A to Z)."""
    by_name = sorted(rows, key=lambda r: (r[0], r[1] or ""), reverse=descending and sort == "name")
    if sort == "name":
        return by_name
    column = 3 + FIELDS.index(sort) if sort in FIELDS else None
    if column is None:  # the averages
        total = 4 if sort == "cpu_avg_ns" else 6
        return sorted(by_name, key=lambda r: r[total] // r[3], reverse=descending)
    return sorted(by_name, key=lambda r: r[column], reverse=descending)


def _details(
    trace: Trace, rows: list[Row], shapes: str
) -> tuple[dict[Key, list[OperatorKernel]], dict[Key, list[OperatorCallStack]]]:
    """The top kernels and call stacks of the rows returned, by key."""
    names = sorted({r[0] for r in rows})
    kernels: dict[Key, list[OperatorKernel]] = {}
    for name, shape, kernel, kind, count, total in query_derived(
        trace, _KERNELS.replace("{shapes}", shapes), [names, TOP_KERNELS]
    ):
        kernels.setdefault((name, shape), []).append(
            OperatorKernel(name=kernel, kind=kind, count=count, total_ns=total)
        )
    stacks: dict[Key, list[OperatorCallStack]] = {}
    for name, shape, frames, count, cpu in query_derived(
        trace, _STACKS.replace("{shapes}", shapes), [names, TOP_STACKS]
    ):
        stacks.setdefault((name, shape), []).append(
            OperatorCallStack(frames=frames, count=count, cpu_total_ns=cpu)
        )
    for ks in kernels.values():
        ks.sort(key=lambda k: (-k.total_ns, k.name))
    for cs in stacks.values():
        cs.sort(key=lambda c: (-c.cpu_total_ns, c.frames))
    return kernels, stacks


def _public(
    row: Row, kernels: dict[Key, list[OperatorKernel]], stacks: dict[Key, list[OperatorCallStack]]
) -> OperatorPublic:
    name, shapes, kind, count, cpu_total, cpu_self, device_total, device_self = row
    return OperatorPublic(
        name=name, kind=kind, input_shapes=shapes, count=count,
        cpu_total_ns=cpu_total, cpu_self_ns=cpu_self,
        device_total_ns=device_total, device_self_ns=device_self,
        cpu_avg_ns=cpu_total // count, device_avg_ns=device_total // count,
        kernels=kernels.get((name, shapes), []), call_stacks=stacks.get((name, shapes), []),
    )  # fmt: skip


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
    shapes = "input_shapes" if group == "shape" else "NULL::VARCHAR"
    needle = q.casefold()
    rows = [
        r for r in query_derived(trace, _ROWS.replace("{shapes}", shapes))
        if needle in r[0].casefold()
    ]  # fmt: skip
    top = _sorted(rows, sort, descending)[:limit]
    kernels, stacks = _details(trace, top, shapes) if top else ({}, {})
    flags = query_derived(trace, _FLAGS)
    has_stacks, has_modules = flags[0] if flags else (0, 0)
    return OperatorsPublic(
        trace_id=trace_id,
        group="shape" if group == "shape" else "name",
        sort=sort,
        count=len(rows),
        items=[_public(r, kernels, stacks) for r in top],
        has_stacks=bool(has_stacks),
        has_modules=bool(has_modules),
    )
