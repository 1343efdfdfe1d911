"""The Ranges tab's pure builders: row ids, the default range, the grids and the charts."""

from __future__ import annotations

from typing import Any

import pytest

from dashboard.components.ranges_panel import (
    default_range,
    parse_range_key,
    range_key,
    ranges_panel,
)
from dashboard.figures.ranges import graph_replays_figure, range_durations_figure

HOSTILE = "<img src=x onerror=alert(1)>"


def _stat(name: str, count: int, side: str = "cpu", domain: str | None = None) -> Any:
    return {"name": name, "domain": domain, "style": None, "side": side, "count": count,
            "total_ns": 10 * count, "avg_ns": 10.0, "med_ns": 10.0, "min_ns": 10, "max_ns": 10,
            "std_ns": 0.0, "time_pct": 50.0}  # fmt: skip


@pytest.mark.parametrize(
    "key",
    [None, "", "not json", '[1, null, "cpu"]', '["a", null, "both"]', '["a", 3, "cpu"]', "{}"],
)
def test_bad_row_ids_select_nothing(key: str | None) -> None:
    assert parse_range_key(key) is None


def test_row_ids_round_trip_names_with_quotes_and_colons() -> None:
    assert parse_range_key(range_key('a "b": c', "NCCL", "gpu")) == ('a "b": c', "NCCL", "gpu")


def test_default_range_prefers_a_repeated_one() -> None:
    assert default_range([_stat("once", 1), _stat("twice", 2)]) == ("twice", None, "cpu")
    assert default_range([_stat("once", 1)]) == ("once", None, "cpu")
    assert default_range([]) is None


def _find(component: Any, wanted: str) -> Any:
    if getattr(component, "id", None) == wanted:
        return component
    children = getattr(component, "children", None)
    for child in children if isinstance(children, list) else [children]:
        if child is not None and not isinstance(child, str):
            found = _find(child, wanted)
            if found is not None:
                return found
    return None


def test_grid_holds_names_as_text_and_hides_empty_columns() -> None:
    ranges = {"trace_id": "t", "items": [_stat(HOSTILE, 2)], "total": 1, "note": ""}
    durations = {"trace_id": "t", "name": HOSTILE, "domain": None, "side": "cpu",
                 "start_ns": [0, 5], "dur_ns": [10, 10], "count": 2}  # fmt: skip
    panel = ranges_panel(ranges, (HOSTILE, None, "cpu"), durations, None, "r")  # type: ignore[arg-type]
    grid = _find(panel, "r-grid")
    assert grid.rowData[0]["name"] == HOSTILE and grid.dangerously_allow_code is False
    assert not any("cellRenderer" in c for c in grid.columnDefs)
    fields = [c["field"] for c in grid.columnDefs]
    assert "domain" not in fields and "style" not in fields and "side" not in fields
    title = _find(panel, "r-durations").figure.layout.title.text
    assert "<img" not in title and "&lt;img" in title
    assert "Could not load the CUDA graphs" in str(panel)


def test_durations_chart_draws_every_instance_in_a_fitting_unit() -> None:
    fig = range_durations_figure(
        {"start_ns": [0, 1, 2], "dur_ns": [1_500, 2_000, 900_000], "count": 5}, "fwd"
    )
    assert list(fig.data[0].x) == [1.5, 2.0, 900.0] and "µs" in fig.layout.xaxis.title.text
    assert "3 longest of 5" in fig.layout.title.text
    empty = range_durations_figure({"start_ns": [], "dur_ns": [], "count": 0}, "x")
    assert empty.layout.annotations[0].text == "No instance of this range."


def test_replay_chart_has_two_series_per_graph() -> None:
    replay = {"span_ns": 2000, "gpu_ns": 1500}
    graphs = [{"graph": 1, "replays": [replay] * 3}, {"graph": 2, "replays": [replay]}]
    fig = graph_replays_figure(graphs)
    assert [t.name for t in fig.data] == [
        "graph 1 span", "graph 1 GPU time", "graph 2 span", "graph 2 GPU time"]  # fmt: skip
    assert list(fig.data[0].y) == [2.0, 2.0, 2.0]
    assert graph_replays_figure([]).layout.annotations
