"""The kernel bar chart, checked as data: no Dash server, no browser."""

from __future__ import annotations

import html
import json
from pathlib import Path

import plotly.graph_objects as go
import plotly.io as pio
import pytest

from dashboard.api.traces import KernelStat
from dashboard.figures import kernel_top_figure
from dashboard.figures.kernels import TEMPLATE
from dashboard.format import shorten_kernel_name

KERNEL_SUMS = (
    Path(__file__).resolve().parents[1] / "data" / "torch" / "h200_train_step.kernel_sums.json"
)


def _stat(name: str, total_ns: int, count: int = 3, pct: float = 1.0) -> KernelStat:
    mean = total_ns // count
    return KernelStat(
        name=name, count=count, total_ns=total_ns, mean_ns=mean, min_ns=mean, max_ns=mean, pct=pct
    )


@pytest.fixture
def h200_kernels() -> list[KernelStat]:
    """The real H200 trace's kernels, in a scrambled order, as the API would shape them."""
    kernels = json.loads(KERNEL_SUMS.read_text())["kernels"]
    total = sum(int(k["total_ns"]) for k in kernels)
    stats = [
        _stat(k["name"], int(k["total_ns"]), int(k["count"]), 100 * int(k["total_ns"]) / total)
        for k in kernels
    ]
    return stats[::-1]


def _bar(fig: go.Figure) -> go.Bar:
    (bar,) = fig.data
    assert isinstance(bar, go.Bar)
    return bar


def test_top_ten_sorted_largest_first_and_drawn_at_the_top(h200_kernels: list[KernelStat]) -> None:
    fig = kernel_top_figure(h200_kernels)
    bar = _bar(fig)
    assert bar.orientation == "h"
    assert len(bar.x) == 10
    assert list(bar.x) == sorted(bar.x, reverse=True)
    assert fig.layout.yaxis.autorange == "reversed"
    expected = sorted(h200_kernels, key=lambda k: k["total_ns"], reverse=True)[:10]
    ticks = [html.unescape(t) for t in fig.layout.yaxis.ticktext]
    assert ticks == [shorten_kernel_name(k["name"]) for k in expected]
    assert list(fig.layout.yaxis.tickvals) == list(bar.y)


def test_hover_has_the_full_name_count_total_and_mean(h200_kernels: list[KernelStat]) -> None:
    bar = _bar(kernel_top_figure(h200_kernels))
    top = max(h200_kernels, key=lambda k: k["total_ns"])
    longest = max(h200_kernels[:10], key=lambda k: len(k["name"]))
    texts = [html.unescape(t.replace("<br>", "")) for t in bar.hovertext]
    assert top["name"] in texts[0]
    assert any(longest["name"] in t for t in texts)
    assert "count: 3" in texts[0]
    assert "total: 30.8 µs" in texts[0]
    assert "mean: 10.2 µs" in texts[0]
    assert bar.hovertemplate == "%{hovertext}<extra></extra>"


def test_markup_in_names_is_escaped_for_plotly() -> None:
    name = "void k<float, at::native::Foo<int> >(float*)"
    bar = _bar(kernel_top_figure([_stat(name, 1000)]))
    assert "<float" not in bar.hovertext[0]
    assert "&lt;float" in bar.hovertext[0]


@pytest.mark.parametrize(
    ("max_ns", "unit", "x0"),
    [(30_752, "µs", 30.752), (4_500_000, "ms", 4.5), (812, "ns", 812.0)],
)
def test_axis_unit_follows_the_longest_bar(max_ns: int, unit: str, x0: float) -> None:
    fig = kernel_top_figure([_stat("a", max_ns), _stat("b", max_ns // 2)])
    assert fig.layout.xaxis.ticksuffix == f" {unit}"
    assert _bar(fig).x[0] == pytest.approx(x0)


def test_kernels_with_the_same_short_name_keep_a_bar_each() -> None:
    names = [f"void k<{t}>(int)" for t in ("float", "half")]
    fig = kernel_top_figure([_stat(names[0], 2000), _stat(names[1], 1000)])
    assert len(set(_bar(fig).y)) == 2


def test_template_and_height_are_consistent() -> None:
    fig = kernel_top_figure([_stat(f"k{i}", 1000 * (i + 1)) for i in range(3)])
    assert fig.layout.template == pio.templates[TEMPLATE]
    assert fig.layout.height == 96 + 34 * 3


def test_empty_state_says_so() -> None:
    fig = kernel_top_figure([])
    assert len(fig.data) == 0
    assert "No kernels" in fig.layout.annotations[0].text
    assert fig.layout.xaxis.visible is False
