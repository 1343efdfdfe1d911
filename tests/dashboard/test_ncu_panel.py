"""The Nsight Compute sections card and its charts, built without a browser."""

from __future__ import annotations

from typing import Any

from dashboard.components.ncu_panel import launch_of, ncu_panel
from dashboard.figures.ncu import MAX_STALLS, occupancy_figure, sol_figure, stalls_figure


def _kernel(ncu_id: int, name: str, **extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "ncu_id": ncu_id, "name": name, "device": 0, "duration_ns": 1000, "invocations": None,
        "grid": None, "block": None, "speed_of_light": [], "occupancy": None, "memory": [],
        "stalls": [], "stall_unit": None, "rules": [], "sections": [],
    }  # fmt: skip
    return {**base, **extra}


def _text(component: Any) -> str:
    """Every string in a Dash component tree."""
    if isinstance(component, str):
        return component
    if isinstance(component, list | tuple):
        return " ".join(_text(c) for c in component)
    children = getattr(component, "children", None)
    return "" if children is None else _text(children)


def _find(component: Any, id_: str) -> Any:
    if getattr(component, "id", None) == id_:
        return component
    children = getattr(component, "children", None)
    for child in children if isinstance(children, list) else [children]:
        if child is not None and not isinstance(child, str):
            found = _find(child, id_)
            if found is not None:
                return found
    return None


RULES = [
    {"section": "Occupancy", "name": "Small", "type": "OPT", "description": "d",
     "speedup_type": "local", "speedup_pct": 3.0},
    {"section": "SOL", "name": "Info", "type": "INF", "description": "d",
     "speedup_type": None, "speedup_pct": None},
    {"section": "Occupancy", "name": "Big", "type": "OPT", "description": "d",
     "speedup_type": "global", "speedup_pct": 40.0},
]  # fmt: skip
OCC = {
    "theoretical_pct": 50.0, "achieved_pct": 25.0, "theoretical_warps_per_sm": 32.0,
    "achieved_warps_per_sm": 16.0, "waves_per_sm": 1.0,
    "block_limits": [{"label": "Registers", "value": 2.0, "metric": "r"},
                     {"label": "Warps", "value": 4.0, "metric": "w"}],
    "limiters": ["Registers"],
}  # fmt: skip


def test_card_shows_the_chosen_launch_with_its_blocks() -> None:
    kernels = [_kernel(0, "gemm"), _kernel(7, "add<float>", rules=RULES, occupancy=OCC)]
    body = {"trace_id": "t", "page": "details", "note": "n", "total": 2, "kernels": kernels}
    card = ncu_panel(body, [], "t", {"tab": "roofline", "ncu": "7", "color": "bound"}, "p")
    assert _find(card, "p-kernel").children == "add<float>"
    limits = _text(_find(card, "p-limits"))
    assert "Registers ◀ limiter" in limits and "Warps ◀" not in limits
    rules = _find(card, "p-rules").children
    assert [r.children[1].children.strip() for r in rules] == ["Big", "Small", "Info"]
    links = _find(card, "p-launches").children
    assert links[1].children.href == "/traces/t?tab=roofline&color=bound&ncu=7"
    assert "No roofline point" in _text(card)


def test_card_states_without_data() -> None:
    assert "Could not load" in _text(ncu_panel(None, [], "t", {}, "p"))
    empty = {"trace_id": "t", "page": "raw", "note": "re-ingest it", "total": 0, "kernels": []}
    assert "re-ingest it" in _text(ncu_panel(empty, [], "t", {}, "p"))
    body = {"trace_id": "t", "page": "raw", "note": "", "total": 1, "kernels": [_kernel(0, "k")]}
    card = ncu_panel(body, [], "t", {"ncu": "99"}, "p")  # unknown id: the first launch
    assert _find(card, "p-kernel").children == "k"


def test_launch_of_a_clicked_point() -> None:
    body = {"kernels": [_kernel(3, "a"), _kernel(4, "b"), _kernel(5, "b")]}
    assert launch_of(body, "b") == 4 and launch_of(body, "zzz") is None


def test_charts_bars_and_empty_states() -> None:
    sol = [{"label": "Compute (SM) Throughput", "value": 90.0, "metric": "m"}]
    assert list(sol_figure(_kernel(0, "k", speed_of_light=sol)).data[0].x) == [90.0]
    assert list(occupancy_figure(_kernel(0, "k", occupancy=OCC)).data[0].x) == [50.0, 25.0]
    stalls = [{"label": f"r{i}", "value": float(30 - i), "metric": "m"} for i in range(30)]
    fig = stalls_figure(_kernel(0, "k", stalls=stalls, stall_unit="samples"))
    assert len(fig.data[0].x) == MAX_STALLS and fig.layout.xaxis.title.text == "samples"
    for figure in (sol_figure(_kernel(0, "k")), occupancy_figure(_kernel(0, "k")),
                   stalls_figure(_kernel(0, "k"))):  # fmt: skip
        assert not figure.data and figure.layout.annotations


def test_memory_hierarchy_block_marks_the_bound_and_says_what_is_missing() -> None:
    levels = [
        {"level": "DRAM", "bytes": 1.7e7, "peak_bytes_per_s": 4.8e12, "time_ns": 3510.0,
         "pct_of_duration": 13.9, "peak_metrics": ["dram__bytes.sum.peak_sustained", "c"]},
        {"level": "L2", "bytes": 8.5e7, "peak_bytes_per_s": 1.02e13, "time_ns": 8320.0,
         "pct_of_duration": 33.0, "peak_metrics": ["p", "c"]},
    ]  # fmt: skip
    hierarchy = {"l1_hit_pct": None, "l2_hit_pct": 73.71, "levels": levels, "bound_level": "L2"}
    kernels = [_kernel(0, "gemm", hierarchy=hierarchy), _kernel(1, "add")]
    sections = {"page": "raw", "note": "", "total": 2, "kernels": kernels}
    card = ncu_panel(sections, [], "t", {"ncu": "0"}, "ncu")
    assert "L2 hit rate 73.7%" in _text(_find(card, "ncu-hits"))
    assert "L1/TEX hit rate —" in _text(_find(card, "ncu-hits"))
    table = _text(_find(card, "ncu-hierarchy"))
    assert "L2 ◀ bound" in table and "DRAM ◀" not in table and "33.0%" in table
    other = ncu_panel(sections, [], "t", {"ncu": "1"}, "ncu")
    assert "No hit rates or level bytes in this CSV." in _text(other)
    assert _find(other, "ncu-hierarchy") is None
