"""The timeline of a stored trace: collection at ingest, the level-of-detail index, lanes, gaps,
windows and steps; and, for the browser renderer, flows, area summaries and counter tracks.
"""

from backend.services.timeline.area import get_area_summary
from backend.services.timeline.collect import TimelineCollector
from backend.services.timeline.columns import window_columns
from backend.services.timeline.counters import get_counters
from backend.services.timeline.events import get_event_detail, list_gaps, search
from backend.services.timeline.flows import get_event_flows
from backend.services.timeline.index import write_timeline_index
from backend.services.timeline.launch import GPU_WORK, LAUNCHED_BY
from backend.services.timeline.steps import (
    annotation_ranges,
    launched_in_steps,
    list_steps,
    set_step_marker,
)
from backend.services.timeline.utilization import get_overview
from backend.services.timeline.windows import (
    DEFAULT_MAX_ITEMS,
    get_lanes,
    get_window,
    ready_trace,
    window_items,
)

__all__ = [
    "DEFAULT_MAX_ITEMS",
    "GPU_WORK",
    "LAUNCHED_BY",
    "TimelineCollector",
    "annotation_ranges",
    "get_area_summary",
    "get_counters",
    "get_event_detail",
    "get_event_flows",
    "get_lanes",
    "get_overview",
    "get_window",
    "launched_in_steps",
    "list_gaps",
    "list_steps",
    "ready_trace",
    "search",
    "set_step_marker",
    "window_columns",
    "window_items",
    "write_timeline_index",
]
