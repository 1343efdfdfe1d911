"""The stack and module trees' paths, summed once at ingest (read by `op_stacks`).

torch writes a `python_function` event per Python frame it saw (stored as kind `python`);
frames nest by time on their thread like ops do, so a frame's stack is the path of frames
around it. Each rank's threads are walked once, and every path kept is summed over its
occurrences: total and count, and its children's total (so the read side gets self time by
subtraction). Sums over ranks and parts are exact, so a request adds up the parts' rows.

Public surface: `stack_tree_table`, `STACK_TREE_SCHEMA`, `MODULE_PREFIX`, `TREES`.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby
from pathlib import Path

import pyarrow as pa

from backend.services.analysis.stored import counts, read_events_file, rows_table

MODULE_PREFIX = "nn.Module: "
TREES = ("stacks", "modules")
_SQL = """
SELECT kind, name, start_ns, dur_ns, rank, pid, tid FROM {events}
WHERE kind IN ('python', 'cpu_op') AND rank IS NOT DISTINCT FROM ?
ORDER BY pid NULLS FIRST, tid NULLS FIRST, start_ns, start_ns + dur_ns DESC, id
"""
_ANY_FRAME = "SELECT 1 FROM {events} WHERE kind = 'python' LIMIT 1"
STACK_TREE_SCHEMA = pa.schema(
    [
        pa.field("tree", pa.string(), nullable=False),  # stacks or modules
        pa.field("path", pa.list_(pa.string()), nullable=False),
        *counts("total_ns", "count", "child_total_ns"),
    ]
)


@dataclass(slots=True)
class _Agg:
    """One path of the tree, summed over its occurrences."""

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


def _sum_paths(threads: list[list[Row]], modules: bool, aggs: dict[tuple[str, ...], _Agg]) -> None:
    for rows in threads:
        for path, dur in _paths(rows, modules):
            agg = aggs.setdefault(path, _Agg())
            agg.total += dur
            agg.count += 1
            if len(path) > 1:
                aggs[path[:-1]].child_total += dur


def stack_tree_table(events: Path, ranks: list[int | None]) -> pa.Table:
    """Both trees of the given ranks' threads, summed by path (`STACK_TREE_SCHEMA`).

    Args:
        events: a dataset's events file.
        ranks: the ranks in it, each read on its own so one rank's rows are held at a time.
    """
    trees: dict[str, dict[tuple[str, ...], _Agg]] = {t: {} for t in TREES}
    if not read_events_file(events, _ANY_FRAME):  # without with_stack: both trees empty
        ranks = []
    for rank in ranks:
        rows = read_events_file(events, _SQL, [rank])
        threads = [[r[:4] for r in g] for _, g in groupby(rows, key=lambda r: (r[5], r[6]))]
        del rows
        _sum_paths(threads, False, trees["stacks"])
        _sum_paths(threads, True, trees["modules"])
    out = [
        (tree, list(path), a.total, a.count, a.child_total)
        for tree, aggs in trees.items()
        for path, a in aggs.items()
    ]
    return rows_table(out, STACK_TREE_SCHEMA)
