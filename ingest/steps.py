"""Which annotation ranges are a trace's steps: the one rule every consumer uses.

The ingest summary (median step time), the timeline's "Jump to step" and a marker that a
user chose later, re-applied to the stored events, all call `find_steps` on the trace's CPU
annotation ranges (`record_function` / `user_annotation`, NVTX push/pop and start/end), so
they can never disagree about what a step is. The order:

1. the marker the user chose for this trace (source ``"user"``);
2. ``ProfilerStep#N``, which torch.profiler's schedule emits (source ``"ProfilerStep"``);
3. otherwise the repeated *top-level* annotation family that covers the most time (source
   ``"auto"``): one name repeated (``compiled_step`` x 4) or one name with a numeric suffix
   (``train_step_0`` .. ``train_step_4``). Top-level: inside no other annotation range of the
   same thread. Its ranges must not overlap on one rank, as steps follow one another.

Otherwise the trace has no steps and the marker is None. A family is named by `marker_of`:
the trailing number becomes ``N``. A numbered family's steps keep their numbers; a repeated
name's steps are numbered 0, 1, ... in time order on each rank.

Each step's GPU time (`summarize`) runs from the first start to the last end of the GPU work
launched while its CPU range ran, and of its GPU mirrors (Kineto's `gpu_user_annotation`).

Public surface: `Range`, `StepRange`, `MarkerOption`, `StepMarking`, `marker_of`,
`find_steps`, `summarize`, `gpu_extents`.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ingest.distribution import distribution

if TYPE_CHECKING:  # ingest.summary imports this module
    from ingest.summary.shape import Step, StepSummary

PROFILER_STEP = "ProfilerStep#N"
_NUMBERED = re.compile(r"^(.*?\D)?(\d+)$")
_MAX_OPTIONS = 50

Launch = tuple[int | None, int, int, int]  # (rank, runtime call start, GPU start, GPU end)


@dataclass(frozen=True, slots=True)
class Range:
    """One annotation range: a CPU range (with its thread) or a GPU mirror."""

    name: str
    start_ns: int
    dur_ns: int
    rank: int | None = None
    pid: int | None = None
    tid: int | None = None


class StepRange(tuple[int, int | None, str, int, int]):
    """(step, rank, name, start_ns, dur_ns) of one step's CPU range."""

    __slots__ = ()

    @property
    def step(self) -> int:
        """The step's number."""
        return self[0]

    @property
    def rank(self) -> int | None:
        """The rank it ran on (None in single-process traces)."""
        return self[1]

    @property
    def name(self) -> str:
        """The annotation's own name, e.g. ``train_step_3``."""
        return self[2]

    @property
    def start_ns(self) -> int:
        """CPU range start."""
        return self[3]

    @property
    def dur_ns(self) -> int:
        """CPU range duration."""
        return self[4]


@dataclass(frozen=True, slots=True)
class MarkerOption:
    """A family a user may pick: its marker, how many ranges it has, whether it is top-level."""

    marker: str
    count: int
    top_level: bool


@dataclass(frozen=True, slots=True)
class StepMarking:
    """The outcome of `find_steps`: the marker used, why, its steps and the other options."""

    marker: str | None
    source: str | None  # "user", "ProfilerStep", "auto" or None (no steps found)
    steps: list[StepRange] = field(default_factory=list)  # by rank, then step
    options: list[MarkerOption] = field(default_factory=list)  # most ranges first


def marker_of(name: str) -> str:
    """The family of an annotation name: a trailing number becomes ``N``.

    >>> marker_of("ProfilerStep#12"), marker_of("train_step_3"), marker_of("compiled_step")
    ('ProfilerStep#N', 'train_step_N', 'compiled_step')
    >>> marker_of("step 0"), marker_of("7")
    ('step N', 'N')
    """
    match = _NUMBERED.match(name)
    return name if match is None else f"{match[1] or ''}N"


def _number(name: str) -> int | None:
    match = _NUMBERED.match(name)
    return None if match is None else int(match[2])


def _matches(chosen: str, family: str, names: set[str]) -> bool:
    """Whether a marker a user typed names this family: the family itself, one of its names,
    or a numbered family's prefix with or without its separator (``train_step``)."""
    if chosen == family or chosen in names:
        return True
    if family.endswith("N") and any(_number(n) is not None for n in names):
        prefix = family[:-1]
        return bool(prefix) and chosen in (prefix, prefix.rstrip("_#-.: "))
    return False


def _top_level(ranges: list[Range]) -> list[bool]:
    """For each range, whether no other range of its thread contains it."""
    order = sorted(
        range(len(ranges)),
        key=lambda i: (ranges[i].rank, ranges[i].pid, ranges[i].tid, ranges[i].start_ns,
                       -ranges[i].dur_ns),
    )  # fmt: skip
    top = [True] * len(ranges)
    thread: tuple[int | None, int | None, int | None] | None = None
    reach = -1
    for i in order:
        r = ranges[i]
        key = (r.rank, r.pid, r.tid)
        if key != thread:
            thread, reach = key, -1
        end = r.start_ns + r.dur_ns
        if end <= reach:
            top[i] = False
        reach = max(reach, end)
    return top


def _sequential(members: list[Range]) -> bool:
    """No two ranges of the family overlap on one rank."""
    last: dict[int | None, int] = {}
    for r in sorted(members, key=lambda r: r.start_ns):
        if r.start_ns < last.get(r.rank, -1):
            return False
        last[r.rank] = r.start_ns + r.dur_ns
    return True


def _steps(members: list[Range]) -> list[StepRange]:
    numbered = all(_number(r.name) is not None for r in members)
    out: dict[tuple[int | None, int], StepRange] = {}
    ordinal: dict[int | None, int] = {}
    for r in sorted(members, key=lambda r: r.start_ns):
        if numbered:
            n = _number(r.name)
            assert n is not None
        else:
            n = ordinal[r.rank] = ordinal.get(r.rank, -1) + 1
        out.setdefault((r.rank, n), StepRange((n, r.rank, r.name, r.start_ns, r.dur_ns)))
    return [out[k] for k in sorted(out, key=lambda k: (-1 if k[0] is None else k[0], k[1]))]


def find_steps(ranges: Iterable[Range], marker: str | None = None) -> StepMarking:
    """The steps of a trace from its CPU annotation ranges, by the rule in the module doc.

    Args:
        ranges: every CPU annotation range of the trace (GPU mirrors excluded).
        marker: a marker the user chose (a family such as ``train_step_N``, one of its names,
            or a numbered family's prefix such as ``train_step``); None to find one.

    Returns:
        The marker used and its source, the steps, and every family a user could pick. A
        chosen marker that names no family gives that marker, source ``"user"``, no steps.
    """
    items = list(ranges)
    top = _top_level(items)
    families: dict[str, list[Range]] = {}
    tops: dict[str, int] = {}
    for r, is_top in zip(items, top, strict=True):
        family = marker_of(r.name)
        families.setdefault(family, []).append(r)
        tops[family] = tops.get(family, 0) + is_top
    options = sorted(
        (MarkerOption(f, len(m), tops[f] == len(m)) for f, m in families.items()),
        key=lambda o: (-o.count, o.marker),
    )[:_MAX_OPTIONS]
    if marker is not None:
        for family, members in families.items():
            if _matches(marker, family, {r.name for r in members}):
                return StepMarking(family, "user", _steps(members), options)
        return StepMarking(marker, "user", [], options)
    if PROFILER_STEP in families:
        return StepMarking(PROFILER_STEP, "ProfilerStep", _steps(families[PROFILER_STEP]), options)
    best: tuple[int, int, str] | None = None
    for family, members in families.items():
        if len(members) < 2 or tops[family] != len(members) or not _sequential(members):
            continue
        if family.endswith("N") is False and len({r.name for r in members}) > 1:
            continue
        key = (sum(r.dur_ns for r in members), len(members), family)
        best = key if best is None or key > best else best
    if best is None:
        return StepMarking(None, None, [], options)
    return StepMarking(best[2], "auto", _steps(families[best[2]]), options)


def summarize(
    marking: StepMarking, launched: Iterable[Launch], mirrors: Iterable[Range] = ()
) -> StepSummary:
    """Every step with its CPU and GPU durations, their distributions, and the marker.

    Args:
        marking: what `find_steps` answered.
        launched: (rank, runtime call start, GPU start, GPU end) of each kernel, copy and
            memset; a step's GPU extent covers the work launched while its CPU range ran.
        mirrors: the GPU mirrors of annotations (Kineto's ``gpu_user_annotation``); those
            of the marker's family widen their step's extent too.
    """
    extents = gpu_extents(marking, launched, mirrors)
    steps: list[Step] = []
    for s in marking.steps:
        extent = extents.get((s.rank, s.step))
        gpu = extent[1] - extent[0] if extent else None
        steps.append(
            {"step": s.step, "rank": s.rank, "start_ns": s.start_ns, "cpu_ns": s.dur_ns,
             "gpu_ns": gpu}
        )  # fmt: skip
    cpu = [s["cpu_ns"] for s in steps]
    gpu_ns = [s["gpu_ns"] for s in steps if s["gpu_ns"] is not None]
    return {
        "steps": steps,
        "cpu": distribution(cpu) if cpu else None,
        "gpu": distribution(gpu_ns) if gpu_ns else None,
        "marker": marking.marker,
        "marker_source": marking.source,
    }


def gpu_extents(
    marking: StepMarking, launched: Iterable[Launch], mirrors: Iterable[Range] = ()
) -> dict[tuple[int | None, int], list[int]]:
    """(rank, step) -> [first GPU start, last GPU end] of the work each step launched and of
    its GPU mirrors, as `summarize` measures a step's GPU time; steps that launched nothing
    are absent."""
    extents = _extents(marking.steps, launched)
    _add_mirrors(marking, extents, mirrors)
    return extents


def _extents(
    steps: list[StepRange], launched: Iterable[Launch]
) -> dict[tuple[int | None, int], list[int]]:
    extents: dict[tuple[int | None, int], list[int]] = {}
    if not steps:
        return extents
    starts: dict[int | None, tuple[list[int], list[StepRange]]] = {}
    for s in sorted(steps, key=lambda s: s.start_ns):
        pair = starts.setdefault(s.rank, ([], []))
        pair[0].append(s.start_ns)
        pair[1].append(s)
    for rank, cpu_t, gpu_start, gpu_end in launched:
        found = starts.get(rank)
        i = bisect_right(found[0], cpu_t) - 1 if found else -1
        if found is None or i < 0:
            continue
        s = found[1][i]
        if cpu_t < s.start_ns + s.dur_ns:
            _extend(extents, (rank, s.step), gpu_start, gpu_end)
    return extents


def _add_mirrors(
    marking: StepMarking, extents: dict[tuple[int | None, int], list[int]], mirrors: Iterable[Range]
) -> None:
    """Widen steps by their family's mirrors: a numbered family's by number; a repeated
    name's in time order, when each rank has as many mirrors as steps (else none)."""
    names = {s.name for s in marking.steps}
    own = sorted((m for m in mirrors if m.name in names), key=lambda m: m.start_ns)
    if not own:
        return
    numbered = all(_number(s.name) is not None for s in marking.steps)
    per_rank: dict[int | None, list[int]] = {}
    for s in marking.steps:
        per_rank.setdefault(s.rank, []).append(s.step)
    counts = Counter(m.rank for m in own)
    ordinal: dict[int | None, int] = {}
    for m in own:
        if numbered:
            n = _number(m.name)
        else:
            i = ordinal[m.rank] = ordinal.get(m.rank, -1) + 1
            steps = per_rank.get(m.rank, [])
            n = steps[i] if counts[m.rank] == len(steps) else None
        if n is not None:
            _extend(extents, (m.rank, n), m.start_ns, m.start_ns + m.dur_ns)


def _extend(extents: dict[tuple[int | None, int], list[int]], key: tuple[int | None, int],
            start: int, end: int) -> None:  # fmt: skip
    extent = extents.get(key)
    if extent is None:
        extents[key] = [start, end]
    else:
        extent[0] = min(extent[0], start)
        extent[1] = max(extent[1], end)
