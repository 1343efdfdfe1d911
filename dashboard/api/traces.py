"""Trace API calls and their response shapes, built on `ApiClient.get` (and `delete`).

Uploads do not pass here: the browser posts them to the API itself
(dashboard/assets/upload/), which reads the answer as a `TraceAccepted` (its shape is
checked against the API's schema here, in tests/dashboard/test_api_contract.py).

Public surface: `list_traces`, `list_trace_page`, `get_facets`, `get_trace`, `get_kernels`,
`update_trace`, `delete_trace`, `delete_traces`, `TraceQuery` (the list's URL state), and the
TypedDicts they return (`Trace`, `TraceList`, `TraceFacets`, `TraceIds`, `KernelStat`,
`KernelStats`, `TraceAccepted`).
"""

from __future__ import annotations

import contextlib
from dataclasses import asdict, dataclass, fields, replace
from datetime import date, timedelta
from typing import Any, Literal, NotRequired, TypedDict, cast

from dashboard.api.client import ApiClient

__all__ = [
    "Device",
    "KernelStat",
    "KernelStats",
    "Trace",
    "TraceAccepted",
    "TraceFacets",
    "TraceIds",
    "TraceList",
    "TraceQuery",
    "TraceStatus",
    "delete_trace",
    "delete_traces",
    "get_facets",
    "get_kernels",
    "get_trace",
    "list_trace_page",
    "list_traces",
    "update_trace",
]

TraceStatus = Literal["queued", "processing", "ready", "failed"]


class Device(TypedDict, total=False):
    index: int
    name: str
    rank: int  # in a multi-rank trace


class Trace(TypedDict):
    id: str
    name: str
    project: str
    status: TraceStatus
    error: str | None
    format: str | None
    blob_sha256: str
    size_bytes: int
    event_counts: dict[str, int]
    devices: list[Device]
    meta: dict[str, Any]
    skipped_events: int
    warnings: list[str]
    duration_ns: int | None
    progress: NotRequired[dict[str, Any] | None]
    tags: list[str]
    note: str | None
    created_at: str
    updated_at: str


class TraceList(TypedDict):
    items: list[Trace]
    count: int


class TraceFacets(TypedDict):
    projects: list[str]
    formats: list[str]
    tags: list[str]


class TraceIds(TypedDict):
    ids: list[str]


SORTS = ("name", "created", "size", "events", "status")
PAGE_SIZE = 50


@dataclass(frozen=True, slots=True)
class TraceQuery:
    """What the traces list shows, as its URL query holds it: filters, sort, page."""

    project: str = ""
    format: str = ""
    status: str = ""
    tag: str = ""
    q: str = ""
    created_from: str = ""
    created_to: str = ""
    sort: str = "created"
    order: str = "desc"
    page: int = 0

    @classmethod
    def from_url(cls, query: dict[str, Any]) -> TraceQuery:
        """Read the URL's query; unknown keys are ignored and bad values fall back."""
        text = {f.name: str(query.get(f.name) or "") for f in fields(cls) if f.name != "page"}
        page = str(query.get("page") or "0")
        made = cls(**text, page=max(0, int(page) - 1) if page.isdigit() else 0)
        if made.sort not in SORTS:
            made = replace(made, sort="created")
        return made if made.order in ("asc", "desc") else replace(made, order="desc")

    def url_query(self) -> dict[str, str]:
        """The non-default fields as URL parameters (the page counts from 1 there)."""
        default = TraceQuery()
        kept = {k: str(v) for k, v in asdict(self).items() if v != getattr(default, k)}
        if self.page:
            kept["page"] = str(self.page + 1)
        return kept

    def filtered(self) -> bool:
        """Whether any filter or search narrows the list."""
        return any(getattr(self, f) for f in ("project", "format", "status", "tag", "q")) or bool(
            self.created_from or self.created_to
        )

    def params(self) -> dict[str, Any]:
        """Query parameters of `GET /traces` for this page."""
        params: dict[str, Any] = {
            k: v for k, v in asdict(self).items() if v and k not in ("page", "sort", "order")
        }
        if len(self.created_to) == 10:  # a picked day: the API's end is exclusive
            with contextlib.suppress(ValueError):
                day = date.fromisoformat(self.created_to) + timedelta(days=1)
                params["created_to"] = day.isoformat()
        offset = self.page * PAGE_SIZE
        return params | {
            "sort": self.sort,
            "order": self.order,
            "limit": PAGE_SIZE,
            "offset": offset,
        }


class KernelStat(TypedDict):
    name: str
    count: int
    total_ns: int
    mean_ns: int
    min_ns: int
    max_ns: int
    pct: float


class KernelStats(TypedDict):
    trace_id: str
    items: list[KernelStat]
    count: int
    total_kernel_ns: int


class TraceAccepted(TypedDict):
    id: str
    status: TraceStatus
    duplicate: bool


def list_traces(client: ApiClient, *, limit: int = 50, offset: int = 0) -> TraceList:
    """Traces, newest first."""
    return cast(TraceList, client.get("/traces", params={"limit": limit, "offset": offset}))


def list_trace_page(client: ApiClient, query: TraceQuery) -> TraceList:
    """One page of the list, filtered and sorted as `query` says."""
    return cast(TraceList, client.get("/traces", params=query.params()))


def get_facets(client: ApiClient) -> TraceFacets:
    """The projects, formats and tags in use, for the filter pickers."""
    return cast(TraceFacets, client.get("/traces/facets"))


def update_trace(client: ApiClient, trace_id: str, changes: dict[str, Any]) -> Trace:
    """Rename a trace, replace its tags or set its note (only the keys given change)."""
    return cast(Trace, client.patch(f"/traces/{trace_id}", json=changes))


def delete_traces(client: ApiClient, trace_ids: list[str]) -> TraceIds:
    """Delete several traces, all or none."""
    return cast(TraceIds, client.post("/traces/delete", json={"ids": trace_ids}))


def get_trace(client: ApiClient, trace_id: str) -> Trace:
    """One trace with its status, error and summary."""
    return cast(Trace, client.get(f"/traces/{trace_id}"))


def get_kernels(client: ApiClient, trace_id: str, limit: int = 10) -> KernelStats:
    """The `limit` kernels with the most total GPU time (one row per kernel name)."""
    path = f"/traces/{trace_id}/kernels"
    return cast(KernelStats, client.get(path, params={"limit": limit}))


def delete_trace(client: ApiClient, trace_id: str) -> None:
    """Delete a trace and everything derived from it."""
    client.delete(f"/traces/{trace_id}")
