"""The Compare charts' time axis is in the unit of the largest delta, so it never reads
`-200k µs`, and the hover writes each delta as every page writes a duration."""

from __future__ import annotations

import pytest

from dashboard.figures.compare import category_delta_figure, kernel_delta_figure


def _row(key: str, delta: float) -> dict[str, object]:
    return {"key": key, "name": key, "a": 1_000_000.0, "b": 1_000_000.0 + delta,
            "delta": delta, "delta_pct": None, "better": delta < 0}  # fmt: skip


@pytest.mark.parametrize(
    ("deltas", "suffix", "bars"),
    [
        ([-200_000_000.0, 5_000_000.0], " ms", [-200.0, 5.0]),  # was "-200k µs"
        ([-2_500.0, 800.0], " µs", [-2.5, 0.8]),
        ([-1.5e9], " s", [-1.5]),
    ],
)
def test_the_time_axis_takes_the_largest_deltas_unit(
    deltas: list[float], suffix: str, bars: list[float]
) -> None:
    fig = kernel_delta_figure([_row(f"k{i}", d) for i, d in enumerate(deltas)], "time")
    assert fig.layout.xaxis.ticksuffix == suffix
    assert list(fig.data[0].x) == pytest.approx(bars)
    assert "(µs)" not in fig.layout.xaxis.title.text


def test_hover_writes_the_delta_by_magnitude() -> None:
    fig = kernel_delta_figure([_row("gemm", -200_000_000.0)], "time")
    assert "Δ -200 ms" in fig.data[0].hovertext[0]


def test_shares_stay_in_points() -> None:
    rows = [{"category": "compute", "label": "compute", "a": 40.0, "b": 35.0, "delta": -5.0,
             "delta_pct": None, "better": None}]  # fmt: skip
    fig = category_delta_figure(rows, "share")
    assert fig.layout.xaxis.ticksuffix == "" and list(fig.data[0].x) == [-5.0]
