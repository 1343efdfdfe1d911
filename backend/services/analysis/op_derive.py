"""The Operators view's tables, derived once at ingest from one rank's op tree.

`op_tree` builds the tree; this sums it by (rank, name, input shapes), the finest key the
view groups by, so the read side (`operators`) answers `group=name` and `group=shape` by
summing these rows with DuckDB: every field is a sum over calls, so sums over shapes and
ranks are exact. Three tables, each a few thousand rows for a 1M-event rank:

- operators: per key, calls, CPU and device totals and self times, and the kind of the
  key's first call (`first_ord`: its place in the tree walk, rank-major, so the read side
  picks the kind the walk over the whole trace would meet first);
- op_kernels: per key and GPU event name, the launches under the key's calls (once per
  enclosing call, like device_total) and their summed duration;
- op_call_stacks: per key and Python call stack (with_stack), calls and CPU time.

Public surface: `OPERATOR_SCHEMA`, `OP_KERNEL_SCHEMA`, `OP_CALL_STACK_SCHEMA`,
`operator_tables`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from backend.services.analysis.op_tree import Node
from backend.services.analysis.stored import counts, rows_table

LISTED_KINDS = ("cpu_op", "annotation")
_RANK_SHIFT = 40  # first_ord = (rank + 1) << 40 | walk position: ranks in order, no rank first

_KEY = [
    pa.field("rank", pa.int32()),
    pa.field("name", pa.string(), nullable=False),
    pa.field("input_shapes", pa.string()),
]
OPERATOR_SCHEMA = pa.schema(
    [
        *_KEY,
        pa.field("kind", pa.string(), nullable=False),
        *counts("first_ord", "count", "cpu_total_ns", "cpu_self_ns"),
        *counts("device_total_ns", "device_self_ns"),
    ]
)
OP_KERNEL_SCHEMA = pa.schema(
    [
        *_KEY,
        pa.field("kernel", pa.string(), nullable=False),
        pa.field("kind", pa.string(), nullable=False),
        *counts("first_ord", "count", "total_ns"),
    ]
)
OP_CALL_STACK_SCHEMA = pa.schema(
    [
        *_KEY,
        pa.field("frames", pa.list_(pa.string()), nullable=False),
        *counts("count", "cpu_total_ns"),
    ]
)

Key = tuple[str, str | None]


@dataclass(slots=True)
class _Row:
    kind: str
    first_ord: int
    sums: list[int] = field(default_factory=lambda: [0, 0, 0, 0, 0])  # count, cpu, self, dev..
    kernels: dict[str, list[int | str]] = field(default_factory=dict)  # [count, ns, kind, ord]
    stacks: dict[tuple[str, ...], list[int]] = field(default_factory=dict)  # [count, cpu ns]


class OperatorTables:
    """The three tables of one part, filled one rank's forest at a time."""

    def __init__(self) -> None:
        self._rows: dict[tuple[int | None, str, str | None], _Row] = {}

    def add(self, rank: int | None, roots: list[Node]) -> None:
        """Sum one rank's forest; each GPU event counts for every listed op around it."""
        base = ((-1 if rank is None else rank) + 1) << _RANK_SHIFT
        seq, rows = 0, self._rows
        stack: list[tuple[Node, tuple[_Row, ...]]] = [(r, ()) for r in reversed(roots)]
        while stack:
            node, above = stack.pop()
            seq += 1
            if node.kind in LISTED_KINDS:
                key = (rank, node.name, node.shapes)
                if (row := rows.get(key)) is None:  # no throwaway _Row per call
                    row = rows[key] = _Row(node.kind, base | seq)
                _add_call(row, node)
                above = (*above, row)
            for g in node.gpu:
                for r in above:
                    if (k := r.kernels.get(g.name)) is None:
                        k = r.kernels[g.name] = [0, 0, g.kind, base | seq]
                    k[0] = int(k[0]) + 1
                    k[1] = int(k[1]) + g.dur_ns
            stack.extend((c, above) for c in reversed(node.children))

    def tables(self) -> dict[str, pa.Table]:
        """The part's tables by name (`layout.OPERATORS_TABLE`...)."""
        ops: list[tuple[object, ...]] = []
        kernels: list[tuple[object, ...]] = []
        stacks: list[tuple[object, ...]] = []
        for (rank, name, shapes), row in self._rows.items():
            ops.append((rank, name, shapes, row.kind, row.first_ord, *row.sums))
            kernels.extend(
                (rank, name, shapes, kernel, v[2], v[3], v[0], v[1])
                for kernel, v in row.kernels.items()
            )
            stacks.extend(
                (rank, name, shapes, list(path), v[0], v[1]) for path, v in row.stacks.items()
            )
        return {
            "operators": rows_table(ops, OPERATOR_SCHEMA),
            "op_kernels": rows_table(kernels, OP_KERNEL_SCHEMA),
            "op_call_stacks": rows_table(stacks, OP_CALL_STACK_SCHEMA),
        }


def operator_tables() -> OperatorTables:
    """An empty set of operator tables to `add` each rank's forest to."""
    return OperatorTables()


def _add_call(row: _Row, node: Node) -> None:
    s = row.sums
    s[0] += 1
    s[1] += node.cpu_total_ns
    s[2] += node.cpu_self_ns
    s[3] += node.device_total_ns
    s[4] += node.device_self_ns
    if node.stack is not None:
        site = row.stacks.setdefault(node.stack, [0, 0])
        site[0] += 1
        site[1] += node.cpu_total_ns
