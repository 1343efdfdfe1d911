"""torch.compile in a torch profiler trace: compile phases, compiles, recompiles, compile time.

What torch writes (read from torch 2.11's `tests/data/torch/h200_compile`; docs/CI.md lists
what differs across versions):

- Each ``dynamo_timed`` block (torch/_dynamo/utils.py) is a ``cpu_op`` named
  ``<phase> (dynamo_timed)``: ``_compile.compile_inner`` (one frame compile),
  ``OutputGraph.call_user_compiler``, ``create_aot_dispatcher_function``,
  ``GraphLowering.compile_to_module``, ``async_compile.wait``... These are the phases, and the
  keys of ``torch._dynamo.utils.compile_times()``, which sums the same blocks. torch 2.11 also
  writes the same block a second time without the suffix, and event-log names (``dynamo``,
  ``entire_frame_compile``, ``backend_compile``); those are left out so nothing counts twice.
- A ``record_function`` annotation ``<phase>_data: ... compile_id=F/N`` inside a compile
  gives its id: frame F, its Nth compile (N > 0: a recompile, e.g. a new static shape).
- Running compiled code: ``Torch-Compiled Region: F/N`` (one call of compile N of frame F),
  ``TorchDynamo Cache Lookup`` (the guard check on each call) and ``CompiledFunction`` (the
  AOTAutograd function). These are run time, listed apart, never added to compile time.

Definitions:

- A phase's total is inclusive (its ranges' summed durations); its self time excludes the
  phases nested in it on the same thread.
- Compile time is the union, per thread, of the top-level phases (those no other phase
  contains), summed over threads: nested phases count once.
- Run time is the trace's span, first to last event of any kind: the profiled window.
- Graph breaks are inferred: a graph break makes dynamo compile the rest of the function as
  a frame of its own, so they are the frames compiled beyond the first. A second compiled
  function counts as one too; ``torch._dynamo.utils.counters["graph_break"]``, pushed as a
  metric, is the exact count.

Public surface: `compute_compile`.
"""

import re
from collections import defaultdict
from dataclasses import dataclass
from itertools import groupby
from typing import Any

from sqlmodel import Session

from backend.models.compile import (
    CompilePhase,
    CompilePublic,
    CompileRegion,
    CompileRun,
)
from backend.services.analysis.stored import read_events
from backend.services.traces import get_trace

SUFFIX = " (dynamo_timed)"
FRAME_COMPILE = "compile_inner"  # _compile.compile_inner; _compile.<locals>.compile_inner before
REGION_NAMES = ("Torch-Compiled Region%", "TorchDynamo Cache Lookup", "CompiledFunction%")
COMPILE_ID = re.compile(r"compile_id=\[?(\d+)/(\d+)")
TOP_PHASES = 10

_SQL = f"""
SELECT kind, name, start_ns, dur_ns, rank, pid, tid FROM {{events}}
WHERE kind IN ('cpu_op', 'annotation') AND (name LIKE '%{SUFFIX}' OR name LIKE '%compile_id=%'
    OR {" OR ".join(f"name LIKE '{n}'" for n in REGION_NAMES)})
ORDER BY rank NULLS FIRST, pid NULLS FIRST, tid NULLS FIRST, start_ns, start_ns + dur_ns DESC
"""
_SPAN = "SELECT min(start_ns), max(start_ns + dur_ns) FROM {events}"
NO_COMPILE = (
    "No torch.compile ranges in this trace: profile the first calls of a compiled model "
    "(torch 2.x writes its compile phases as `<phase> (dynamo_timed)` ranges)."
)


@dataclass(slots=True)
class _Phase:
    name: str
    start: int
    end: int
    children_ns: int = 0
    top: bool = True


@dataclass(slots=True)
class _Acc:
    count: int = 0
    total: int = 0
    self_ns: int = 0
    top: bool = False


def _nest(rows: list[tuple[Any, ...]]) -> list[_Phase]:
    """One thread's phases (sorted by start, end descending), each told its nested time."""
    out: list[_Phase] = []
    open_: list[_Phase] = []
    for _kind, name, start, dur, *_ in rows:
        p = _Phase(name.removesuffix(SUFFIX), start, start + dur)
        while open_ and (start >= open_[-1].end or p.end > open_[-1].end):
            open_.pop()
        if open_:
            open_[-1].children_ns += dur
            p.top = False
        open_.append(p)
        out.append(p)
    return out


def _union_ns(phases: list[_Phase]) -> int:
    """Time covered by the top-level phases of one thread."""
    total, reach = 0, None
    for p in sorted((p for p in phases if p.top), key=lambda p: p.start):
        start = p.start if reach is None else max(p.start, reach)
        if p.end > start:
            total += p.end - start
        reach = p.end if reach is None else max(reach, p.end)
    return total


def _compiles(phases: list[_Phase], ids: list[tuple[int, int, int]]) -> list[CompileRun]:
    """Each frame compile, with the compile id of the first annotation inside it."""
    out = []
    for p in phases:
        if not p.name.endswith(FRAME_COMPILE):
            continue
        found = next(((f, n) for t, f, n in ids if p.start <= t <= p.end), None)
        out.append(CompileRun(
            compile_id=f"{found[0]}/{found[1]}" if found else None,
            frame=found[0] if found else None, frame_compile=found[1] if found else None,
            start_ns=p.start, dur_ns=p.end - p.start,
        ))  # fmt: skip
    return sorted(out, key=lambda c: c.start_ns)


def _is_region(name: str) -> bool:
    return not name.endswith(SUFFIX) and "compile_id=" not in name


def _regions(rows: list[tuple[Any, ...]]) -> list[CompileRegion]:
    acc: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for _kind, name, _start, dur, *_ in rows:
        acc[name][0] += 1
        acc[name][1] += dur
    return [CompileRegion(name=n, count=c, total_ns=t)
            for n, (c, t) in sorted(acc.items(), key=lambda x: (-x[1][1], x[0]))]  # fmt: skip


def _phase_rows(phases: list[_Phase]) -> list[CompilePhase]:
    acc: dict[str, _Acc] = defaultdict(_Acc)
    for p in phases:
        a = acc[p.name]
        a.count += 1
        a.total += p.end - p.start
        a.self_ns += p.end - p.start - p.children_ns
        a.top = a.top or p.top
    rows = [CompilePhase(name=n, count=a.count, total_ns=a.total, self_ns=a.self_ns,
                         top_level=a.top) for n, a in acc.items()]  # fmt: skip
    return sorted(rows, key=lambda r: (-r.total_ns, r.name))


def compute_compile(*, session: Session, trace_id: str, top: int = TOP_PHASES) -> CompilePublic:
    """Compile phases by time, frame compiles and recompiles, compile time against run time.

    Args:
        session: the database session.
        trace_id: the trace.
        top: how many phases to list, by inclusive time (`phase_count` counts them all).

    Returns:
        Empty lists and zeros, with a note, for a trace without torch.compile ranges.

    Raises:
        NotFoundError: no such trace.
    """
    trace = get_trace(session=session, trace_id=trace_id)
    phases: list[_Phase] = []
    ids: list[tuple[int, int, int]] = []
    region_rows: list[tuple[Any, ...]] = []
    compile_ns = 0
    for _thread, group in groupby(read_events(trace, _SQL), key=lambda r: r[4:7]):
        rows = list(group)
        thread_phases = _nest([r for r in rows if r[1].endswith(SUFFIX)])
        compile_ns += _union_ns(thread_phases)
        phases.extend(thread_phases)
        ids.extend((r[2], int(m[1]), int(m[2])) for r in rows if (m := COMPILE_ID.search(r[1])))
        region_rows.extend(r for r in rows if _is_region(r[1]))
    compiles = _compiles(phases, sorted(ids))
    span = read_events(trace, _SPAN) if phases or region_rows else []
    run_ns = int(span[0][1] - span[0][0]) if span and span[0][0] is not None else 0
    frames = sorted({c.frame for c in compiles if c.frame is not None})
    recompiled = sorted({c.frame for c in compiles if c.frame_compile and c.frame is not None})
    all_phases = _phase_rows(phases)
    return CompilePublic(
        trace_id=trace_id, phases=all_phases[:top], phase_count=len(all_phases),
        compiles=compiles, graphs_compiled=len(compiles), frames=frames,
        recompiles=sum(1 for c in compiles if c.frame_compile),
        recompiled_frames=recompiled,
        graph_breaks=max(len(frames) - 1, 0) if frames else None,
        regions=_regions(region_rows), compile_ns=compile_ns, run_ns=run_ns,
        compile_pct=100.0 * compile_ns / run_ns if run_ns else None,
        note=_note(bool(phases), bool(region_rows)),
    )  # fmt: skip


def _note(has_phases: bool, has_regions: bool) -> str:
    if has_phases:
        return (
            "Phases: torch's dynamo_timed ranges, total inclusive and self time. Compile time: "
            "the union of top-level phases per thread. Run time: the trace's span."
        )
    if has_regions:
        return (
            "Compiled code runs here, but was compiled before the profiler started: no "
            "compile phases. Profile the first calls to see them."
        )
    return NO_COMPILE
