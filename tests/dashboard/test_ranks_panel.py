"""The Steps and Ranks panels as pure builders: their empty and single-rank states, and the
slowest step marked in the table and the chart."""

from __future__ import annotations

from typing import Any

from dashboard.components.ranks_panel import ranks_panel, steps_panel
from dashboard.figures.steps import step_figure


def _text(component: Any) -> str:
    """Every string in a component tree."""
    if isinstance(component, str):
        return component
    children = getattr(component, "children", None)
    if children is None:
        return ""
    if isinstance(children, (list, tuple)):
        return " ".join(_text(c) for c in children)
    return _text(children)


def _row(step: int, rank: int | None, span: int, slowest: bool) -> dict[str, Any]:
    return {"step": step, "name": f"ProfilerStep#{step}", "rank": rank, "device": 0,
            "start_ns": 0, "end_ns": span, "span_ns": span, "compute_ns": span // 2,
            "communication_ns": 0, "memcpy_ns": 0, "memset_ns": 0, "idle_ns": span - span // 2,
            "slowest": slowest}  # fmt: skip


def test_no_steps_says_how_to_get_them() -> None:
    panel = steps_panel({"items": [], "spread": None, "marker": None}, "t", "s")
    assert "no steps" in _text(panel)


def test_slowest_step_is_marked_in_table_and_chart() -> None:
    rows = [_row(1, 0, 100, False), _row(1, 1, 90, False), _row(2, 0, 300, True),
            _row(2, 1, 250, True)]  # fmt: skip
    spread = {"count": 2, "p50_ns": 200, "p95_ns": 300, "min_ns": 100, "max_ns": 300,
              "max_over_min": 3.0, "slowest_step": 2}  # fmt: skip
    panel = steps_panel({"items": rows, "spread": spread, "marker": "ProfilerStep#N",
                         "marker_source": "ProfilerStep", "rule": "r"}, "t", "s")  # fmt: skip
    grid = next(c for c in panel.children if getattr(c, "id", None) == "s-table")
    assert [r["step"] for r in grid.rowData] == ["1", "1", "2 ★ slowest", "2 ★ slowest"]
    fig = step_figure(rows)
    assert list(fig.data[0].marker.line.width) == [0, 0, 2.5, 2.5]
    assert list(fig.data[0].x[1]) == ["rank 0 · GPU 0", "rank 1 · GPU 0"] * 2  # grouped


def test_single_rank_shows_a_note_and_the_copies() -> None:
    ranks = {"items": [{**_row(0, None, 10, False), "devices": [0],
                        "comm_compute_overlap_pct": None, "collective_wait_ns": 0}],
             "stragglers": [], "rule": "r"}  # fmt: skip
    summary = {"transfers": {"pinned_pct": 50.0, "pageable_pct": 50.0, "kinds": [
        {"op": "memcpy", "kind": "HtoD", "src": "Pageable", "dst": "Device", "count": 3,
         "bytes": 3000, "total_ns": 1000, "bandwidth_gbps": 3.0}]}}  # fmt: skip
    text = _text(ranks_panel(ranks, {"items": []}, summary, "r"))
    assert "Single-rank trace" in text and "No collective kernels" in text
    assert "50.0% / 50.0%" in text
