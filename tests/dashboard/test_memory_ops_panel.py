"""The Memory tab's by-op builders: URL state, stack cells, links, and the empty states."""

from __future__ import annotations

from typing import Any

import pytest
from dash import html

from dashboard.components.memory_ops_panel import (
    MemoryOpsQuery,
    _stack_cell,
    memory_ops_panel,
    memory_ops_query,
)


@pytest.mark.parametrize(
    ("query", "want"),
    [
        ({}, MemoryOpsQuery()),
        ({"mdevice": "1", "mgroup": "stack", "msort": "peak_bytes"},
         MemoryOpsQuery(1, "stack", "peak_bytes")),
        ({"mdevice": "-1"}, MemoryOpsQuery(-1)),
        ({"mdevice": "-2", "mgroup": "module", "msort": "bytes"}, MemoryOpsQuery()),
        ({"mdevice": "gpu0"}, MemoryOpsQuery()),
    ],
)  # fmt: skip
def test_query_from_the_url(query: dict[str, str], want: MemoryOpsQuery) -> None:
    assert memory_ops_query(query) == want


def test_links_keep_the_other_choices() -> None:
    q = MemoryOpsQuery(device=-1, group="stack", sort="held_bytes")
    assert q.link("t1", sort="alloc_bytes") == "/traces/t1?tab=memory&mdevice=-1&mgroup=stack"
    assert MemoryOpsQuery().link("t1") == "/traces/t1?tab=memory"


def test_stack_cells_put_the_innermost_frame_first() -> None:
    stack = [
        "train.py(10): <module>",
        "torch/nn/modules/module.py(1783): _call_impl",
        "torch/nn/modules/linear.py(130): forward",
        "<built-in function linear>",
    ]
    cell, full = _stack_cell(stack)
    frames = ["linear()", "linear.py(130): forward", "module.py(1783): _call_impl", "\u2026"]
    assert cell == " \u2039 ".join(frames)
    assert full == " \u203a ".join(stack)
    assert _stack_cell([]) == ("—", "no Python frames recorded")


def _peak(**over: Any) -> dict[str, Any]:
    body = {
        "trace_id": "t1", "rank": None, "device": 0, "devices": [{"rank": None, "device": 0}],
        "group": "op", "has_stacks": False, "peak_t_ns": 5_000_000, "peak_allocated_bytes": 300,
        "peak_reserved_bytes": 400, "live_allocations": 1, "live_bytes": 200,
        "before_trace_bytes": 100, "count": 1, "note": "",
        "items": [{"name": "<script>x</script>", "kind": "op", "stack": [], "allocations": 1,
                   "bytes": 200, "largest_bytes": 200, "share_pct": 66.667}],
    }  # fmt: skip
    return body | over


def _ops(**over: Any) -> dict[str, Any]:
    body = {
        "trace_id": "t1", "rank": None, "device": 0, "devices": [{"rank": None, "device": 0}],
        "group": "op", "sort": "alloc_bytes", "has_stacks": False, "events": 2, "allocs": 1,
        "alloc_bytes": 200, "frees": 0, "free_bytes": 0, "unmatched_frees": 0,
        "unmatched_free_bytes": 0, "outside_op_events": 0, "count": 1, "note": "",
        "items": [{"name": "<script>x</script>", "kind": "op", "stack": [], "allocs": 1,
                   "alloc_bytes": 200, "largest_alloc_bytes": 200, "frees": 0, "free_bytes": 0,
                   "self_net_bytes": 200, "held_bytes": 200, "peak_bytes": 200}],
    }  # fmt: skip
    return body | over


def _text(component: Any) -> str:
    if isinstance(component, str):
        return component
    children = getattr(component, "children", None)
    if children is None:
        return ""
    items = children if isinstance(children, list) else [children]
    return "".join(_text(c) for c in items)


def test_the_panel_shows_the_peak_and_links_the_timeline() -> None:
    panel = memory_ops_panel("t1", _ops(), _peak(), MemoryOpsQuery(), 1_000_000, 10**9, "m")  # type: ignore[arg-type]
    text = _text(panel)
    assert "300 B allocated (400 B reserved) at 4.00 ms into the trace" in text
    assert "100 B allocated before the profiler started" in text
    grids = [c for c in _walk(panel) if type(c).__name__ == "AgGrid"]
    assert [g.id for g in grids] == ["m-peak-grid", "m-ops-grid"]
    assert grids[0].rowData[0]["name"] == "<script>x</script>"  # plain text in the grid
    link = next(c for c in _walk(panel) if getattr(c, "id", None) == "memory-peak-timeline-link")
    assert link.href == "/traces/t1/timeline?start_ns=0&end_ns=10000000"


def _walk(component: Any) -> list[Any]:
    out = [component]
    children = getattr(component, "children", None)
    for c in children if isinstance(children, list) else [children] if children else []:
        if not isinstance(c, str):
            out += _walk(c)
    return out


def test_the_panel_without_memory_or_without_the_api() -> None:
    none = _ops(device=None, devices=[], items=[], note="profile with profile_memory=True")
    panel = memory_ops_panel("t1", none, _peak(peak_t_ns=None), MemoryOpsQuery(), 0, 1, "m")  # type: ignore[arg-type]
    assert "profile_memory=True" in _text(panel)
    failed = memory_ops_panel("t1", None, None, MemoryOpsQuery(), 0, 1, "m")
    assert "Could not load" in _text(failed)
    assert isinstance(failed, html.Div)
