"""Timeline API calls the Dash page makes, and their response shapes, built on
`ApiClient.get` (and `put`). The canvas renderer (`assets/timeline/`) calls the window,
lane, counter, search, event and flow routes itself, from the browser.

Public surface: `get_steps`, `set_step_marker`, `get_gaps`, `export_path`,
`events_parquet_path`, and the TypedDicts they return.
"""

from __future__ import annotations

from typing import TypedDict, cast

from dashboard.api.client import ApiClient

__all__ = [
    "Gap",
    "Gaps",
    "Step",
    "StepMarkerOption",
    "Steps",
    "events_parquet_path",
    "export_path",
    "get_gaps",
    "get_steps",
    "set_step_marker",
]


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


def _base(trace_id: str) -> str:
    return f"/traces/{trace_id}"


def get_steps(client: ApiClient, trace_id: str) -> Steps:
    """Step windows in step order, the marker they come from and the markers to choose from."""
    return cast(Steps, client.get(f"{_base(trace_id)}/timeline/steps"))


def set_step_marker(client: ApiClient, trace_id: str, marker: str | None) -> Steps:
    """Keep `marker` as the trace's step marker (None: automatic); its steps come back."""
    return cast(Steps, client.put(f"{_base(trace_id)}/step-marker", json={"marker": marker}))


def get_gaps(client: ApiClient, trace_id: str, min_ns: int = 100_000, limit: int = 20) -> Gaps:
    """Longest GPU idle gaps with their cause."""
    params = {"min_ns": min_ns, "limit": limit}
    return cast(Gaps, client.get(f"{_base(trace_id)}/timeline/gaps", params=params))


def export_path(trace_id: str) -> str:
    """Where the browser downloads the Chrome trace JSON (same origin as the pages)."""
    return f"/api/v1{_base(trace_id)}/export.json"


def events_parquet_path(trace_id: str) -> str:
    """Where the browser downloads the stored events as Parquet (same origin as the pages)."""
    return f"/api/v1{_base(trace_id)}/events.parquet"
