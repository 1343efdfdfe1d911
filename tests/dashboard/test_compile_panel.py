"""The Compile tab's card and chart, built without a browser."""

from __future__ import annotations

from typing import Any

from dashboard.components.compile_panel import compile_panel
from dashboard.figures.compile import phases_figure
from tests.dashboard.test_ncu_panel import _find, _text

PHASES = [
    {"name": "_compile.compile_inner", "count": 4, "total_ns": 5_200_000_000,
     "self_ns": 38_000_000, "top_level": True},
    {"name": "build_guards", "count": 4, "total_ns": 146_000_000, "self_ns": 146_000_000,
     "top_level": False},
]  # fmt: skip
COMPILES = [
    {"compile_id": "0/0", "frame": 0, "frame_compile": 0, "start_ns": 100, "dur_ns": 4_000},
    {"compile_id": "0/1", "frame": 0, "frame_compile": 1, "start_ns": 9_100, "dur_ns": 500},
]


def _body(**extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "trace_id": "t", "phases": PHASES, "phase_count": 54, "compiles": COMPILES,
        "graphs_compiled": 2, "frames": [0], "recompiles": 1, "recompiled_frames": [0],
        "graph_breaks": 0, "regions": [], "compile_ns": 5_300_000_000,
        "run_ns": 6_000_000_000, "compile_pct": 88.3, "note": "n",
    }  # fmt: skip
    return {**base, **extra}


def test_card_with_phases_compiles_and_tiles() -> None:
    card = compile_panel(_body(), "c")  # type: ignore[arg-type]
    tiles = _text(_find(card, "c-kpis"))
    assert "5.30 s" in tiles and "88.3%" in tiles and "frames: 0" in tiles
    assert "Top 2 of 54 compile phases" in _text(card)
    compiles = _text(_find(card, "c-compiles"))
    assert "recompile" in compiles and "9.00 µs" in compiles  # starts relative to the first
    assert "No compiled region ran" in _text(card)


def test_regions_only_and_errors() -> None:
    regions = [{"name": "Torch-Compiled Region: 0/0", "count": 4, "total_ns": 2_000_000}]
    card = compile_panel(_body(phases=[], compiles=[], regions=regions), "c")  # type: ignore[arg-type]
    assert _find(card, "c-kpis") is None and _find(card, "c-phases") is None
    assert "Torch-Compiled Region: 0/0" in _text(_find(card, "c-regions"))
    assert "Could not load" in _text(compile_panel(None, "c"))


def test_phases_figure_bars_and_empty() -> None:
    fig = phases_figure(PHASES)
    assert [t.name for t in fig.data] == ["total (inclusive)", "self"]
    assert list(fig.data[0].x) == [5.2, 0.146] and list(fig.data[1].customdata) == [4, 4]
    assert len(phases_figure([]).data) == 0
