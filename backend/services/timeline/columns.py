"""A timeline window as columns: the compact form the browser's canvas renderer draws.

A 5,000-item window as one JSON object per item is ~1 MB and its pydantic validation a
third of the request; as columns (parallel arrays, names once in a table) it is ~150 KB
and goes out through `orjson` untouched. Times are offsets from the trace's first
nanosecond, because absolute ns (~1.7e18 on Kineto's clock) exceed the 2^53 a JavaScript
number holds exactly; the trace's start is sent as a decimal string.

Public surface: `window_columns` (the mix order: `pyramid.MIX_CATEGORIES`).
"""

from typing import Any

from backend.services.timeline.pyramid import MIX_CATEGORIES
from backend.services.timeline.windows import Window


def window_columns(window: Window) -> dict[str, Any]:
    """The window's items as parallel arrays, indexes into `names` and `categories`.

    `id` is -1 for merged blocks; `mix` holds 4 numbers per item (`MIX_CATEGORIES`),
    zeros where the block or event carries none.
    """
    t0 = window.trace_start_ns
    names: dict[str, int] = {}
    categories: dict[str, int] = {}
    items = window.items
    lane: list[int] = []
    start: list[int] = []
    dur: list[int] = []
    depth: list[int] = []
    name: list[int] = []
    category: list[int] = []
    ids: list[int] = []
    count: list[int] = []
    busy: list[int] = []
    mix: list[int] = []
    for item in items:
        lane.append(item.lane)
        start.append(item.start_ns - t0)
        dur.append(item.dur_ns)
        depth.append(item.depth)
        name.append(names.setdefault(item.name, len(names)))
        category.append(categories.setdefault(item.category, len(categories)))
        ids.append(-1 if item.id is None else item.id)
        count.append(item.count)
        busy.append(item.busy_ns)
        parts = item.mix
        mix.extend(parts if parts else (0, 0, 0, 0))
    return {
        "trace_id": window.trace_id,
        "trace_start_ns": str(t0),
        "trace_end_ns": str(window.trace_end_ns),
        "start": window.start_ns - t0,
        "end": window.end_ns - t0,
        "mode": window.mode,
        "level": window.level,
        "merge_gap_ns": window.merge_gap_ns,
        "estimated_events": window.estimated_events,
        "truncated": window.truncated,
        "n": len(items),
        "names": list(names),
        "categories": list(categories),
        "mix_categories": list(MIX_CATEGORIES),
        "lane": lane,
        "start_ns": start,
        "dur_ns": dur,
        "depth": depth,
        "name": name,
        "category": category,
        "id": ids,
        "count": count,
        "busy_ns": busy,
        "mix": mix,
    }
