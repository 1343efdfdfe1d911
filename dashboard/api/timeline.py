"""Timeline API calls and their response shapes, built on `ApiClient.get` (and `put`).

Public surface: `get_window`, `get_overview`, `get_steps`, `set_step_marker`, `search`,
`get_gaps`, `get_event`, `export_path`, `events_parquet_path`, and the TypedDicts they
return.
"""

from __future__ import annotations

from typing import Any, TypedDict, cast

from dashboard.api.client import ApiClient

__all__ = [
    "Event",
    "EventDetail",
    "EventWindow",
    "Gap",
    "Gaps",
    "KernelStatsRow",
    "Lane",
    "NameMatch",
    "Overview",
    "OverviewBin",
    "SearchResult",
    "Step",
    "StepMarkerOption",
    "Steps",
    "TimelineItem",
    "TimelineWindow",
    "events_parquet_path",
    "export_path",
    "get_event",
    "get_gaps",
    "get_overview",
    "get_steps",
    "get_window",
    "search",
    "set_step_marker",
]


class Lane(TypedDict):
    lane: int
    family: str
    group: str
    label: str
    events: int
    busy_ns: int


class TimelineItem(TypedDict):
    lane: int
    start_ns: int
    dur_ns: int
    name: str
    category: str
    count: int
    busy_ns: int
    id: int | None
    depth: int
    args: dict[str, Any] | None


class TimelineWindow(TypedDict):
    trace_id: str
    start_ns: int
    end_ns: int
    trace_start_ns: int
    trace_end_ns: int
    mode: str
    level: int | None
    merge_gap_ns: int | None
    max_items: int
    estimated_events: int
    truncated: bool
    lanes: list[Lane]
    items: list[TimelineItem]


class OverviewBin(TypedDict):
    start_ns: int
    end_ns: int
    utilization: float


class Overview(TypedDict):
    trace_start_ns: int
    trace_end_ns: int
    devices: int
    bins: list[OverviewBin]


class Step(TypedDict):
    step: int
    name: str
    start_ns: int
    end_ns: int


class StepMarkerOption(TypedDict):
    marker: str
    count: int
    top_level: bool


class Steps(TypedDict):
    trace_id: str
    items: list[Step]
    marker: str | None
    marker_source: str | None
    chosen: str | None
    options: list[StepMarkerOption]


class NameMatch(TypedDict):
    name: str
    kind: str
    count: int
    total_ns: int


class EventWindow(TypedDict):
    id: int
    lane: int | None
    name: str
    start_ns: int
    end_ns: int


class SearchResult(TypedDict):
    query: str
    names: list[NameMatch]
    matches: list[EventWindow]
    truncated: bool


class Gap(TypedDict):
    lane: int
    label: str
    start_ns: int
    end_ns: int
    dur_ns: int
    cause: str
    cpu_runtime_ns: int
    cpu_sync_ns: int


class Gaps(TypedDict):
    min_ns: int
    count: int
    rule: str
    items: list[Gap]


class Event(TypedDict):
    id: int
    kind: str
    name: str
    start_ns: int
    dur_ns: int
    device: int | None
    stream: int | None
    pid: int | None
    tid: int | None
    correlation: int | None
    args: dict[str, Any] | None
    lane_label: str | None


class KernelStatsRow(TypedDict):
    name: str
    count: int
    total_ns: int
    mean_ns: int
    min_ns: int
    max_ns: int
    pct: float


class EventDetail(TypedDict):
    event: Event
    runtime: Event | None
    cpu_op: Event | None
    kernel_stats: KernelStatsRow | None


def _base(trace_id: str) -> str:
    return f"/traces/{trace_id}"


def get_window(
    client: ApiClient,
    trace_id: str,
    start_ns: int | None = None,
    end_ns: int | None = None,
    max_items: int = 5000,
    lanes: list[int] | None = None,
) -> TimelineWindow:
    """At most `max_items` items of the window (blocks when zoomed out, events when in),
    of the given lane ids only (all lanes when None)."""
    params: dict[str, Any] = {"max_items": max_items}
    if lanes is not None:
        params["lanes"] = ",".join(map(str, lanes))
    if start_ns is not None and end_ns is not None:
        params |= {"start_ns": start_ns, "end_ns": end_ns}
    return cast(TimelineWindow, client.get(f"{_base(trace_id)}/timeline", params=params))


def get_overview(client: ApiClient, trace_id: str, bins: int = 400) -> Overview:
    """GPU utilisation over the whole trace."""
    path = f"{_base(trace_id)}/timeline/overview"
    return cast(Overview, client.get(path, params={"bins": bins}))


def get_steps(client: ApiClient, trace_id: str) -> Steps:
    """Step windows in step order, the marker they come from and the markers to choose from."""
    return cast(Steps, client.get(f"{_base(trace_id)}/timeline/steps"))


def set_step_marker(client: ApiClient, trace_id: str, marker: str | None) -> Steps:
    """Keep `marker` as the trace's step marker (None: automatic); its steps come back."""
    return cast(Steps, client.put(f"{_base(trace_id)}/step-marker", json={"marker": marker}))


def search(
    client: ApiClient, trace_id: str, query: str, start_ns: int | None, end_ns: int | None
) -> SearchResult:
    """Names containing `query` and their first matches in the window."""
    params: dict[str, Any] = {"q": query, "limit": 50}
    if start_ns is not None and end_ns is not None:
        params |= {"start_ns": start_ns, "end_ns": end_ns}
    return cast(SearchResult, client.get(f"{_base(trace_id)}/timeline/search", params=params))


def get_gaps(client: ApiClient, trace_id: str, min_ns: int = 100_000, limit: int = 20) -> Gaps:
    """Longest GPU idle gaps with their cause."""
    params = {"min_ns": min_ns, "limit": limit}
    return cast(Gaps, client.get(f"{_base(trace_id)}/timeline/gaps", params=params))


def get_event(client: ApiClient, trace_id: str, event_id: int) -> EventDetail:
    """One event, its CPU launch and its kernel stats."""
    return cast(EventDetail, client.get(f"{_base(trace_id)}/events/{event_id}"))


def export_path(trace_id: str) -> str:
    """Where the browser downloads the Chrome trace JSON (same origin as the pages)."""
    return f"/api/v1{_base(trace_id)}/export.json"


def events_parquet_path(trace_id: str) -> str:
    """Where the browser downloads the stored events as Parquet (same origin as the pages)."""
    return f"/api/v1{_base(trace_id)}/events.parquet"
