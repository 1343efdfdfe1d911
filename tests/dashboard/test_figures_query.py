"""A Query result's bar chart draws an ns column in the unit of its largest bar (no
`30k` ns ticks) and hovers it as a duration; other numbers are drawn as they are."""

from __future__ import annotations

from dashboard.figures.query import query_figure


def test_an_ns_column_is_drawn_in_its_largest_unit() -> None:
    rows = [["gemm", 30_752], ["softmax", 4_512]]
    fig = query_figure(["name", "total_ns"], ["VARCHAR", "HUGEINT"], rows)
    assert fig is not None
    bar = fig.data[0]
    assert list(bar.x) == [30.752, 4.512] and fig.layout.xaxis.ticksuffix == " µs"
    assert [c[1] for c in bar.customdata] == ["30.8 µs", "4.51 µs"]


def test_other_numbers_are_drawn_as_they_are() -> None:
    fig = query_figure(["name", "launches"], ["VARCHAR", "BIGINT"], [["a", 30_752], ["b", 7]])
    assert fig is not None
    assert list(fig.data[0].x) == [30_752, 7] and fig.layout.xaxis.ticksuffix is None
