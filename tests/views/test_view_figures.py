"""Pure figure and component builders of the trace views, without a browser."""

from __future__ import annotations

from typing import Any

import pytest

from dashboard.api.views import KernelQuery
from dashboard.components.kernels_panel import columns_for, kernels_panel
from dashboard.figures.memory import memory_figure
from dashboard.figures.overview import time_split_figure
from dashboard.figures.roofline import roofline_figure
from dashboard.pages._trace_tabs import kernel_query, kernel_url_query

SCRIPT = "<script>alert(1)</script>"


def _point(name: str, precision: str, share: float) -> dict[str, Any]:
    return {
        "name": name,
        "op": "aten::mm",
        "device": 0,
        "precision": precision,
        "count": 1,
        "time_ns": 1000,
        "time_share": share,
        "flops": 1e9,
        "bytes": 1e7,
        "intensity": 100.0,
        "flops_per_s": 1e14,
        "bound": "compute",
        "estimated": True,
    }


ROOFLINE = {
    "kind": "estimated",
    "note": "Estimated",
    "devices": [
        {
            "index": 0,
            "name": "H200",
            "peak_dram_bytes_per_s": 4.8e12,
            "source": "x",
            "roofs": [
                {"precision": "fp32", "peak_flops_per_s": 67e12},
                {"precision": "fp64_tensor", "peak_flops_per_s": 67e12},
                {"precision": "fp16_tensor", "peak_flops_per_s": 989.5e12},
            ],
        }
    ],
    "points": [_point(SCRIPT, "bf16", 0.6), _point("gemm", "fp32", 0.1)],
}


def test_roofline_has_roofs_points_and_escaped_hover() -> None:
    fig = roofline_figure(ROOFLINE)
    names = [t.name for t in fig.data]
    assert names.count("DRAM roof 4.8 TB/s") == 1
    assert "fp32 / fp64 tensor 67.0 TFLOP/s" in names, "equal peaks are drawn once"
    points = [t for t in fig.data if t.mode == "markers"]
    assert sorted(t.name for t in points) == ["bf16", "fp32"]
    big = next(t for t in points if t.name == "bf16")
    assert "&lt;script&gt;" in big.hovertext[0] and SCRIPT not in big.hovertext[0]
    assert big.marker.size[0] > next(t for t in points if t.name == "fp32").marker.size[0]
    assert fig.layout.xaxis.type == fig.layout.yaxis.type == "log"
    assert any("ESTIMATES" in a.text for a in fig.layout.annotations)


def test_roofline_overlay_joins_the_same_kernel() -> None:
    other = {**ROOFLINE, "points": [{**_point("gemm", "fp32", 0.2), "intensity": 50.0}]}
    fig = roofline_figure(ROOFLINE, "bound", overlay=other)
    moves = next(t for t in fig.data if t.name == "same kernel, A → B")
    assert list(moves.x) == [100.0, 50.0, None]
    assert {t.name for t in fig.data if t.mode == "markers"} == {
        "A: compute-bound",
        "B: compute-bound",
    }


def test_roofline_without_points_says_why() -> None:
    fig = roofline_figure({"kind": "none", "note": "Profile with record_shapes=True", "points": []})
    assert fig.layout.annotations[0].text == "Profile with record_shapes=True"


def test_time_split_adds_up_to_the_span() -> None:
    exclusive = {
        "compute_ns": 50,
        "communication_ns": 10,
        "memcpy_ns": 20,
        "memset_ns": 5,
        "idle_ns": 15,
    }
    fig = time_split_figure(
        [{"device": 0, "rank": None, "time": {"span_ns": 100, "exclusive": exclusive}}]
    )
    assert [t.x[0] for t in fig.data] == [50.0, 10.0, 20.0, 5.0, 15.0]
    assert sum(t.x[0] for t in fig.data) == pytest.approx(100.0)
    empty = time_split_figure([])
    assert "ProfilerActivity.CUDA" in empty.layout.annotations[0].text


def test_memory_figure_marks_the_peak_in_readable_units() -> None:
    device = {
        "device": 0,
        "rank": None,
        "t_ns": [0, 1_000_000, 2_000_000],
        "allocated": [10_000_000, 70_000_000, 40_000_000],
        "reserved": [80_000_000, 80_000_000, 80_000_000],
        "peak_allocated": 70_000_000,
        "peak_allocated_t_ns": 1_000_000,
        "fragmentation_at_peak_pct": 12.5,
    }
    fig = memory_figure({"start_ns": 0, "devices": [device]})
    peak = next(t for t in fig.data if t.mode == "markers+text")
    assert (peak.x[0], peak.y[0], peak.text[0]) == (1.0, 70.0, "peak 70.0 MB")
    assert fig.layout.yaxis.ticksuffix == " MB"
    assert "12.5% of reserved unused" in peak.hovertemplate


def test_kernel_table_cells_are_text_with_the_full_name_as_tooltip() -> None:
    items = [{"name": SCRIPT, "count": 3, "total_ns": 1500, "pct": 50.0, "grid": [4, 1, 1]}]
    page = {"items": items, "count": 1, "total_kernel_ns": 3000}
    panel = kernels_panel(page, [], KernelQuery(), "k")
    table = panel.children[1].children[-2]
    # The grid renders strings as text; the label is the shortened name, still raw text.
    assert table.rowData[0]["label"].startswith("<script>")
    assert table.rowData[0]["label_full"] == SCRIPT
    assert table.columnDefs[0]["tooltipField"] == "label_full"
    assert [c.field for c in columns_for(items)] == ["label", "count", "total_ns", "pct", "grid"]


def test_kernel_query_round_trips_through_the_url() -> None:
    q = kernel_query({"group": "cpu_op", "sort": "count", "q": "gemm", "page": "2"})
    assert (q.group, q.sort, q.q, q.page) == ("cpu_op", "count", "gemm", 2)
    assert q.params() == {
        "limit": 50,
        "offset": 100,
        "sort": "count",
        "group": "cpu_op",
        "q": "gemm",
    }
    assert kernel_query({"group": "bogus", "sort": "bogus"}) == KernelQuery()
    moved = kernel_url_query({"tab": "kernels", "q": "gemm"}, 3, None, "name", "gemm")
    assert moved == {"tab": "kernels", "q": "gemm", "page": "3"}
    regrouped = kernel_url_query({"tab": "kernels", "page": "3"}, 3, None, "stream", "")
    assert regrouped == {"tab": "kernels", "group": "stream"}, "a new grouping starts at page 0"
    resorted = kernel_url_query({"tab": "kernels", "page": "2"}, 2, "count", "name", "")
    assert resorted == {"tab": "kernels", "sort": "count", "page": "2"}
    assert kernel_url_query({"sort": "count"}, 0, "total_ns", None, None) == {"tab": "kernels"}
