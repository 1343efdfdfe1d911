"""API calls of the Memory snapshot tab: `/traces/{id}/memory-snapshot` and its views.

Public surface: `get_snapshot_views`.
"""

from __future__ import annotations

from typing import Any

from dashboard.api.client import ApiClient

__all__ = ["get_snapshot_views"]

VIEWS = ("segments", "fragmentation", "timeline", "stacks", "phases")


def get_snapshot_views(
    client: ApiClient, trace_id: str, device: int | None, at: str = "peak"
) -> dict[str, Any]:
    """The summary and every view for one device (None: the first), as one dict; the
    segment map is the one `at` the peak or the dump."""
    base = f"/traces/{trace_id}/memory-snapshot"
    params: dict[str, Any] = {} if device is None else {"device": device}
    out: dict[str, Any] = {"summary": client.get(base, params), "at": at}
    for view in VIEWS:
        extra = {"at": at} if view == "segments" else {}
        out[view] = client.get(f"{base}/{view}", params | extra)
    return out
