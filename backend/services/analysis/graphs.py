"""CUDA graphs: each graph launch (replay) with the GPU work it ran, grouped by graph.

A replay is one `cudaGraphLaunch` runtime call. The GPU work of a graph launch (kernels,
memcpy, memset) carries the launch call's correlation id, as any launched work does, so it
is attributed by the launch rule of the timeline (same correlation, same rank and process
where the GPU event names them, the latest call at or before it). Work with a graph node id
(torch's `graph node id`, nsys's `graphNodeId`; 0 means none) that no launch claims is
counted as unattributed (its launch was outside the profiled window, or the runtime was not
traced). Replays belong to one graph when they ran the same graph: the same `graph id` where
the profiler records one (torch), else the same set of graph node ids (nsys; node ids are
unique to an executable graph), else (older torch traces record neither) the same sequence
of kernel names. Graphs are numbered by their first launch. `cuGraphLaunch` (driver API)
calls are not read as launches: under a runtime launch they share its correlation id.

Public surface: `compute_graphs`.
"""

from collections import Counter, defaultdict
from collections.abc import Hashable
from typing import Any, NamedTuple

from sqlmodel import Session

from backend.models.ranges import GraphKernel, GraphReplay, GraphsPublic, GraphStat
from backend.services.analysis.stored import json_int, read_events
from backend.services.traces import get_trace

TOP_KERNELS = 5
_LAUNCHES = """
    SELECT id, rank, pid, correlation, start_ns FROM {events}
    WHERE kind = 'runtime' AND name LIKE 'cudaGraphLaunch%' AND correlation IS NOT NULL
"""
_WORK = f"""
    WITH launches AS ({_LAUNCHES}), work AS (
        SELECT id, kind, name, start_ns, dur_ns, rank, pid, device, correlation,
            -- only args naming a graph are parsed: most GPU work has none
            CASE WHEN args LIKE '%"graph %' THEN {json_int("graph node id")} END AS node,
            CASE WHEN args LIKE '%"graph %' THEN {json_int("graph id")} END AS gid
        FROM {{events}} WHERE kind IN ('kernel', 'memcpy', 'memset')
    ), linked AS (
        SELECT w.id, arg_max(l.id, l.start_ns) AS launch
        FROM work w JOIN launches l ON l.correlation = w.correlation
            AND l.start_ns <= w.start_ns AND (w.rank IS NULL OR l.rank = w.rank)
            AND (w.pid IS NULL OR l.pid = w.pid)
        GROUP BY w.id
    )
    SELECT k.launch, w.kind, w.name, w.start_ns, w.dur_ns, w.device, w.node, w.gid
    FROM work w LEFT JOIN linked k ON k.id = w.id
    WHERE k.launch IS NOT NULL OR coalesce(w.node, 0) <> 0
    ORDER BY w.start_ns, w.id
"""

NO_GRAPHS = (
    "This trace has no CUDA graph launches (no cudaGraphLaunch call, no GPU work with a graph "
    "node id)."
)


class _Work(NamedTuple):
    launch: int | None
    kind: str
    name: str
    start_ns: int
    dur_ns: int
    device: int | None
    node: int | None
    gid: int | None


def _top(work: list[_Work], n: int) -> list[GraphKernel]:
    count: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for w in work:
        if w.kind == "kernel":
            count[w.name] += 1
            total[w.name] += w.dur_ns
    names = sorted(total, key=lambda k: (-total[k], k))[:n]
    return [GraphKernel(name=k, count=count[k], total_ns=total[k]) for k in names]


def _key(work: list[_Work]) -> Hashable:
    """What makes two replays the same graph (the module's rule)."""
    if gids := {w.gid for w in work if w.gid}:
        return ("id", min(gids))
    if nodes := frozenset(w.node for w in work if w.node):
        return ("nodes", nodes)
    return ("names", tuple((w.kind, w.name) for w in work))


def _replay(launch: tuple[Any, ...], work: list[_Work]) -> GraphReplay:
    launch_id, rank, _pid, correlation, launch_start = launch
    start = min(w.start_ns for w in work)
    return GraphReplay(
        launch_id=launch_id, correlation=correlation, rank=rank, device=work[0].device,
        launch_start_ns=launch_start, start_ns=start,
        span_ns=max(w.start_ns + w.dur_ns for w in work) - start,
        gpu_ns=sum(w.dur_ns for w in work), kernels=sum(w.kind == "kernel" for w in work),
        nodes=len(work), top_kernels=_top(work, 3),
    )  # fmt: skip


def _graph(number: int, replays: list[tuple[GraphReplay, list[_Work]]], limit: int) -> GraphStat:
    rows = [r for r, _ in replays]
    work = [w for _, ws in replays for w in ws]
    n = len(rows)
    gids = {w.gid for w in work if w.gid}
    return GraphStat(
        graph=number, graph_id=min(gids) if gids else None,
        node_ids=len({w.node for w in work if w.node}), launches=n,
        kernels_per_replay=sum(r.kernels for r in rows) / n,
        nodes_per_replay=sum(r.nodes for r in rows) / n,
        gpu_ns_total=sum(r.gpu_ns for r in rows), gpu_ns_avg=sum(r.gpu_ns for r in rows) / n,
        span_ns_avg=sum(r.span_ns for r in rows) / n,
        span_ns_min=min(r.span_ns for r in rows), span_ns_max=max(r.span_ns for r in rows),
        top_kernels=_top(work, TOP_KERNELS), replays=rows[:limit],
    )  # fmt: skip


def compute_graphs(*, session: Session, trace_id: str, replays: int = 1000) -> GraphsPublic:
    """CUDA graphs of a trace, each with its replays (launches) and their GPU work.

    Args:
        session: the database session.
        trace_id: the trace.
        replays: at most this many replay rows per graph (the first by GPU start); the
            graph's statistics cover all of them.

    Returns:
        Graphs by first launch, and the counts of launches and unattributed work.

    Raises:
        NotFoundError: no such trace.
    """
    trace = get_trace(session=session, trace_id=trace_id)
    launches = {r[0]: r for r in read_events(trace, _LAUNCHES)}
    by_launch: dict[int, list[_Work]] = defaultdict(list)
    orphans = 0
    for row in read_events(trace, _WORK):
        w = _Work(*row)
        if w.launch is None:
            orphans += 1
        else:
            by_launch[w.launch].append(w)
    graphs: dict[Hashable, list[tuple[GraphReplay, list[_Work]]]] = defaultdict(list)
    for launch_id, work in by_launch.items():
        graphs[_key(work)].append((_replay(launches[launch_id], work), work))
    ordered = sorted(graphs.values(), key=lambda rs: min(r.start_ns for r, _ in rs))
    out = [
        _graph(i, sorted(rs, key=lambda x: x[0].start_ns), replays)
        for i, rs in enumerate(ordered, 1)
    ]
    return GraphsPublic(
        trace_id=trace_id, graphs=out, launches=len(launches), unattributed_nodes=orphans,
        note="" if out or orphans else NO_GRAPHS,
    )  # fmt: skip
