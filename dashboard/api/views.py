"""API calls of the trace views (overview, kernels, roofline, memory, compare).

Shapes are the API's JSON as plain dicts: the backend's pydantic models are the contract,
and these pages read only the keys they draw, tolerating ones they do not know.

Public surface: `get_summary`, `get_kernel_page`, `get_roofline`, `get_memory`,
`get_findings`, `get_device_peaks`, `get_compare`, `get_compare_markdown`, `KernelQuery`,
`SORT_KEYS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dashboard.api.client import ApiClient

__all__ = [
    "KernelQuery",
    "get_compare",
    "get_compare_markdown",
    "get_device_peaks",
    "get_findings",
    "get_kernel_page",
    "get_memory",
    "get_roofline",
    "get_summary",
]

JSON = dict[str, Any]


# Table column -> the API's `sort` key; the API sorts numbers largest first, names A to Z.
SORT_KEYS = {
    "total_ns": "total",
    "count": "count",
    "mean_ns": "mean",
    "max_ns": "max",
    "p95_ns": "p95",
    "label": "name",
}


@dataclass(frozen=True, slots=True)
class KernelQuery:
    """What the kernels table shows: one page, sorted, filtered and grouped."""

    group: str = "name"
    sort: str = "total_ns"
    q: str = ""
    page: int = 0
    page_size: int = 50

    def params(self) -> dict[str, Any]:
        """Query parameters of `/traces/{id}/kernels`."""
        params: dict[str, Any] = {
            "limit": self.page_size,
            "offset": self.page * self.page_size,
            "sort": SORT_KEYS.get(self.sort, "total"),
            "group": self.group,
        }
        if self.q:
            params["q"] = self.q
        return params


def get_summary(client: ApiClient, trace_id: str) -> JSON:
    """The stored summary (`ingest.summary.Summary`); {} while the trace is not ready."""
    body: JSON = client.get(f"/traces/{trace_id}/summary")
    inner = body.get("summary")
    return inner if isinstance(inner, dict) else {}


def get_kernel_page(client: ApiClient, trace_id: str, query: KernelQuery) -> JSON:
    """One page of the kernels table: `items`, `count` (rows in all pages), `total_kernel_ns`."""
    body: JSON = client.get(f"/traces/{trace_id}/kernels", params=query.params())
    return body


def get_roofline(client: ApiClient, trace_id: str) -> JSON:
    """Roofs per device and the points (`RooflinePublic`)."""
    body: JSON = client.get(f"/traces/{trace_id}/roofline")
    return body


def get_device_peaks(client: ApiClient, trace_id: str) -> list[JSON]:
    """Each device's roofs and bandwidth, without computing any points."""
    body: JSON = client.get(f"/traces/{trace_id}/roofline", params={"points": "false"})
    devices: list[JSON] = body.get("devices", [])
    return devices


def get_memory(client: ApiClient, trace_id: str) -> JSON:
    """Memory series per device (`MemoryPublic`)."""
    body: JSON = client.get(f"/traces/{trace_id}/memory")
    return body


def get_findings(client: ApiClient, trace_id: str) -> list[JSON]:
    """The findings' `items`."""
    body: JSON = client.get(f"/traces/{trace_id}/findings")
    items: list[JSON] = body.get("items", [])
    return items


def _compare_params(a: str, b: str, tokens_per_step: float | None) -> dict[str, Any]:
    params: dict[str, Any] = {"a": a, "b": b}
    if tokens_per_step:
        params["tokens_per_step"] = tokens_per_step
    return params


def get_compare(client: ApiClient, a: str, b: str, tokens_per_step: float | None = None) -> JSON:
    """A against B (`ComparePublic`), including the Markdown report."""
    body: JSON = client.get("/compare", params=_compare_params(a, b, tokens_per_step))
    return body


def get_compare_markdown(
    client: ApiClient, a: str, b: str, tokens_per_step: float | None = None
) -> str:
    """Just the Markdown report."""
    params = _compare_params(a, b, tokens_per_step) | {"format": "markdown"}
    return client.get_text("/compare", params=params)
