"""`ingest.steps`: which annotation ranges are steps, by hand and on the H200 fixtures.

The fixtures' own step times (`*.steps.json`) were measured by the workload that made them
(`time.perf_counter_ns` around each step range, which ends with a device synchronize), not
by perfdash; a step's CPU range must lie within that wall time and cover nearly all of it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ingest.aggregate import TraceAggregator
from ingest.registry import parse_file
from ingest.steps import Range, find_steps, marker_of
from tests.summary.helpers import annotation, kernel, runtime, summarize

DATA = Path(__file__).resolve().parents[1] / "data"


def _r(name: str, start: int, dur: int, *, tid: int = 1, rank: int | None = None) -> Range:
    return Range(name, start, dur, rank=rank, pid=1, tid=tid)


# Each case: ranges, then the expected (marker, source, [(step, name)]).
CASES: list[tuple[str, list[Range], tuple[str | None, str | None, list[tuple[int, str]]]]] = [
    (
        "ProfilerStep wins over a longer repeated family",
        [_r("ProfilerStep#3", 0, 10), _r("ProfilerStep#4", 10, 10), _r("big", 30, 500),
         _r("big", 600, 500)],
        ("ProfilerStep#N", "ProfilerStep", [(3, "ProfilerStep#3"), (4, "ProfilerStep#4")]),
    ),
    (
        "one name repeated at top level: numbered 0, 1, ... in time order",
        [_r("compiled_step", 100, 50), _r("compiled_step", 0, 50), _r("inner", 10, 5)],
        ("compiled_step", "auto", [(0, "compiled_step"), (1, "compiled_step")]),
    ),
    (
        "numbered family keeps its numbers; nested repeats and a one-off are not steps",
        [_r("warmup", 0, 900), _r("train_step_7", 1000, 100), _r("fwd", 1010, 10),
         _r("train_step_8", 1100, 100), _r("fwd", 1110, 10)],
        ("train_step_N", "auto", [(7, "train_step_7"), (8, "train_step_8")]),
    ),
    (
        "of two repeated top-level families the one covering more time wins",
        [_r("load", 0, 5), _r("step", 5, 50), _r("load", 55, 5), _r("step", 60, 50)],
        ("step", "auto", [(0, "step"), (1, "step")]),
    ),
    (
        "a family whose ranges overlap (another thread's) is not a step marker",
        [_r("io", 0, 100, tid=2), _r("io", 50, 100, tid=3)],
        (None, None, []),
    ),
    (
        "nothing repeats: no steps",
        [_r("setup", 0, 10), _r("train", 10, 100)],
        (None, None, []),
    ),
    (
        "ranks are numbered apart",
        [_r("it", 0, 10, rank=1), _r("it", 0, 10, rank=0), _r("it", 10, 10, rank=0)],
        ("it", "auto", [(0, "it"), (1, "it"), (0, "it")]),
    ),
]  # fmt: skip


@pytest.mark.parametrize(("ranges", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_find_steps(
    ranges: list[Range], expected: tuple[str | None, str | None, list[tuple[int, str]]]
) -> None:
    found = find_steps(ranges)
    assert (found.marker, found.source, [(s.step, s.name) for s in found.steps]) == expected


@pytest.mark.parametrize(
    ("chosen", "marker", "steps"),
    [
        ("load", "load", [0, 1]),
        ("train_step", "train_step_N", [1, 2]),
        ("train_step_", "train_step_N", [1, 2]),
        ("train_step_N", "train_step_N", [1, 2]),
        ("train_step_2", "train_step_N", [1, 2]),
        ("fwd", "fwd", [0, 1]),  # nested ranges may be chosen too
        ("nope", "nope", []),
    ],
)
def test_a_chosen_marker_overrides_the_rule(chosen: str, marker: str, steps: list[int]) -> None:
    ranges = [
        _r("ProfilerStep#1", 0, 1000),
        _r("load", 0, 5), _r("train_step_1", 5, 50), _r("fwd", 6, 5),
        _r("load", 55, 5), _r("train_step_2", 60, 50), _r("fwd", 61, 5),
    ]  # fmt: skip
    found = find_steps(ranges, chosen)
    assert (found.marker, found.source, [s.step for s in found.steps]) == (marker, "user", steps)
    assert {o.marker: (o.count, o.top_level) for o in found.options}["fwd"] == (2, False)


def test_marker_of() -> None:
    assert [marker_of(n) for n in ("ProfilerStep#12", "step 3", "it", "v2.10")] == [
        "ProfilerStep#N", "step N", "it", "v2.N"
    ]  # fmt: skip


def test_a_repeated_marker_gets_gpu_time_from_its_launches_and_mirrors() -> None:
    # Two `compiled_step` ranges, CPU [0,100) and [100,180). Step 0 launches kernels running
    # [50,90) and [120,170); its mirror [45,60). Step 1 launches [200,230); mirror [195,205).
    events = [
        annotation("compiled_step", 0, 100),
        annotation("compiled_step", 100, 80),
        annotation("compiled_step", 45, 15, gpu=True),
        annotation("compiled_step", 195, 10, gpu=True),
        runtime("cudaLaunchKernel", 10, 5, corr=1),
        runtime("cudaLaunchKernel", 60, 5, corr=2),
        runtime("cudaLaunchKernel", 150, 5, corr=3),
        kernel("x", 50, 40, corr=1),
        kernel("y", 120, 50, corr=2),
        kernel("z", 200, 30, corr=3),
    ]
    steps = summarize(events)[0]["steps"]
    assert (steps["marker"], steps["marker_source"]) == ("compiled_step", "auto")
    assert [(s["step"], s["cpu_ns"], s["gpu_ns"]) for s in steps["steps"]] == [
        (0, 100, 170 - 45),
        (1, 80, 230 - 195),
    ]


def _steps(path: Path) -> dict[str, Any]:
    parsed = parse_file(path)
    aggregator = TraceAggregator()
    aggregator.drain(parsed.items)
    steps: dict[str, Any] = aggregator.summary(parsed.header)["steps"]
    return steps


@pytest.mark.parametrize(
    ("trace", "check", "marker"),
    [
        ("torch/h200_compiled_steps.pt.trace.json.gz", "torch/h200_compiled_steps.steps.json",
         "compiled_step"),
        ("nsys/nvtx_steps.sqlite", "nsys/nvtx_steps.steps.json", "train_step_N"),
    ],
)  # fmt: skip
def test_real_traces_without_profiler_step(trace: str, check: str, marker: str) -> None:
    steps = _steps(DATA / trace)
    measured = json.loads((DATA / check).read_text())["steps"]
    assert (steps["marker"], steps["marker_source"]) == (marker, "auto")
    assert [s["step"] for s in steps["steps"]] == [m["step"] for m in measured]
    for s, m in zip(steps["steps"], measured, strict=True):
        # The range sits inside the measured wall time; entering and leaving it cost < 3%.
        assert 0.97 * m["wall_ns"] <= s["cpu_ns"] <= m["wall_ns"]
        assert s["gpu_ns"] is not None and 0 < s["gpu_ns"] <= m["wall_ns"]
    ordered = sorted(m["wall_ns"] for m in measured)
    assert 0.97 * ordered[(len(ordered) - 1) // 2] <= steps["cpu"]["p50_ns"] <= ordered[-1]


def test_profiler_step_traces_keep_their_marker() -> None:
    steps = _steps(DATA / "torch/h200_train_step.pt.trace.json.gz")
    assert (steps["marker"], steps["marker_source"]) == ("ProfilerStep#N", "ProfilerStep")
    assert [s["step"] for s in steps["steps"]] == [2, 3, 4]
