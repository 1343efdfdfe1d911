"""The bisect panel, its chart and the series marker, built from a hand-written API answer."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from dashboard.api.benchmarks import Bisect, BisectStep
from dashboard.components.bisect_panel import bisect_panel, bisect_summary
from dashboard.figures.bisect import add_bisect_marker, bisect_figure


def _text(component: Any) -> str:
    if isinstance(component, str | int | float):
        return str(component)
    children = getattr(component, "children", None)
    if children is None:
        return ""
    if not isinstance(children, list | tuple):
        children = [children]
    return " ".join(_text(c) for c in children)


def _step(ref: str, position: int, role: str, verdict: str, median: float) -> BisectStep:
    return BisectStep(ref=ref, position=position, role=role, runs=["r" * 32], verdict=verdict,
                      median=median, n=8)  # fmt: skip


def _bisect(status: str = "found") -> Bisect:
    steps = [_step("c0", 0, "good", "good", 4.0), _step("c2", 2, "probe", "bad", 8.1),
             _step("c1", 1, "probe", "good", 4.1), _step("c4", 4, "bad", "bad", 8.0)]  # fmt: skip
    return Bisect(
        id="b1", spec_name="slow", benchmark="slow", label="", metric="step_ms",
        good="c0", bad="c4", status=status, error=None if status == "found" else "3 left",
        commits=["c0", "c1", "c2", "c3", "c4"], commits_source="git", steps=steps,
        runs_used=6, budget=10, runner="celery@gpu-1", last_good="c1", first_bad="c2",
        trigger="api", trace_diff="/compare?a=t1&b=t2", created_at="2026-12-02T16:00:00Z",
    )  # fmt: skip


def test_the_summary_names_the_commit_budget_and_trace_diff() -> None:
    text = " ".join(_text(bisect_summary(_bisect())).split())
    assert "bisected to c2 (last good c1 )" in text
    assert "6 / 10 runs" in text and "celery@gpu-1" in text
    assert "trace diff" in text


def test_an_unfinished_bisect_says_why_it_stopped() -> None:
    text = _text(bisect_summary(_bisect("budget_exhausted")))
    assert "budget_exhausted" in text and "3 left" in text and "bisected" not in text


def test_the_steps_table_has_one_row_per_measured_commit() -> None:
    refs = [getattr(c, "data-ref", None) for c in _walk(bisect_panel(_bisect()))]
    assert [r for r in refs if r] == ["c0", "c2", "c1", "c4"]


def _walk(component: Any) -> list[Any]:
    out = [component]
    children = getattr(component, "children", None)
    for child in children if isinstance(children, list | tuple) else [children]:
        if child is not None and not isinstance(child, str | int | float):
            out += _walk(child)
    return out


def test_the_chart_marks_the_first_bad_commit_only_when_found() -> None:
    found = bisect_figure(dict(_bisect()))
    assert [s["x0"] for s in found.layout.shapes] == [1.5]
    assert list(found.data[0].x) == [0, 2, 1, 4]
    assert not bisect_figure(dict(_bisect("bisecting"))).layout.shapes


def test_the_series_marker_sits_before_the_bad_push() -> None:
    # c1..c3 were never pushed: the marker goes between the pushes of c0 and c4.
    series = {"points": [{"commit": c} for c in ("c0", "c4", "c5")]}
    fig = go.Figure()
    add_bisect_marker(fig, series, dict(_bisect()))
    assert [s["x0"] for s in fig.layout.shapes] == [0.5]
    assert "bisected to c2" in fig.layout.annotations[0].text
    pushed = {"points": [{"commit": c} for c in ("c0", "c1", "c2", "c4")]}
    fig = go.Figure()
    add_bisect_marker(fig, pushed, dict(_bisect()))
    assert [s["x0"] for s in fig.layout.shapes] == [1.5]
