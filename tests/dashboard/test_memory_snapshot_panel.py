"""The Memory snapshot panel and figures as pure builders: a two-GPU snapshot's device links
keep the map's moment, and an empty history draws the charts' empty states, not errors."""

from __future__ import annotations

from typing import Any

from dashboard.components.memory_snapshot_panel import memory_snapshot_panel
from dashboard.figures.memory_snapshot import (
    fragmentation_figure,
    phase_peaks_figure,
    segment_map_figure,
    snapshot_timeline_figure,
)


def _data(devices: list[int]) -> dict[str, Any]:
    totals = {"allocated": 1, "reserved": 2, "free_bytes": 1, "free_split_bytes": 0,
              "segments": 1}  # fmt: skip
    summary = {"device": devices[-1], "devices": devices, "peak": totals, "dump": totals,
               "entries": 0, "notes": []}  # fmt: skip
    return {
        "summary": summary,
        "at": "dump",
        "timeline": {"time_us": [], "allocated": [], "reserved": [], "peak": totals},
        "segments": {"items": []},
        "fragmentation": {"peak": [], "dump": []},
        "stacks": {"peak_allocated": 1, "items": []},
        "phases": {"source": "snapshot annotations", "items": []},
    }


def _links(node: Any) -> list[str]:
    found = [node.href] if getattr(node, "href", None) else []
    children = getattr(node, "children", None)
    for child in children if isinstance(children, list) else [children]:
        if child is not None and not isinstance(child, str):
            found += _links(child)
    return found


def test_device_links_and_the_moment_link_keep_each_other() -> None:
    panel = memory_snapshot_panel(_data([0, 1]), "t1", "p")
    links = _links(panel)
    assert "/traces/t1?tab=memsnap&device=0" in links
    assert "/traces/t1?tab=memsnap&at=peak&device=1" in links
    single = _links(memory_snapshot_panel(_data([0]), "t1", "p"))
    assert single == ["/traces/t1?tab=memsnap&at=peak"]


def test_empty_views_draw_empty_states() -> None:
    for fig in (
        segment_map_figure([], "peak"),
        fragmentation_figure({"peak": [], "dump": []}),
        snapshot_timeline_figure({"time_us": []}, []),
        phase_peaks_figure([]),
    ):
        assert not fig.data
        assert fig.layout.annotations
