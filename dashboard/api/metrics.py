"""API calls of the metrics pages (SLA board, series, runs), as plain JSON dicts.

Public surface: `get_board`, `get_facets`, `get_series`, `list_runs`, `accept_baseline`.
"""

from __future__ import annotations

from typing import Any

from dashboard.api.client import ApiClient

__all__ = [
    "APPLY_SLAS_ROUTE",
    "accept_baseline",
    "get_board",
    "get_facets",
    "get_series",
    "list_runs",
]

# The route an empty board tells a user to try on the API docs page (the CLI's `sla apply`).
APPLY_SLAS_ROUTE = "POST /api/v1/slas/apply"

JSON = dict[str, Any]


def _clean(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if v not in (None, "")}


def get_board(
    client: ApiClient, *, project: str | None, branch: str | None, gpu: str | None
) -> list[JSON]:
    """Every SLA with status, last value, threshold and sparkline."""
    params = _clean({"project": project, "branch": branch, "gpu": gpu})
    items: list[JSON] = client.get("/slas/board", params=params)
    return items


def get_facets(client: ApiClient) -> dict[str, list[str]]:
    """Projects, branches and GPU models, for the filters."""
    facets: dict[str, list[str]] = client.get("/metrics/facets")
    return facets


def get_series(
    client: ApiClient, *, project: str, benchmark: str, metric: str, branch: str | None
) -> JSON:
    """One series with change points and thresholds."""
    params = _clean(
        {"project": project, "benchmark": benchmark, "metric": metric, "branch": branch}
    )
    series: JSON = client.get("/metrics/series", params=params)
    return series


def list_runs(client: ApiClient, *, project: str | None, limit: int = 50) -> JSON:
    """Recent runs with points and verdicts."""
    runs: JSON = client.get("/metrics/runs", params=_clean({"project": project, "limit": limit}))
    return runs


def accept_baseline(client: ApiClient, *, sla_id: str, reason: str, commit: str | None) -> JSON:
    """Accept a commit's level (default: where the open regression began) as an SLA's
    baseline; the API records who, when and why."""
    body = _clean({"reason": reason, "commit": commit})
    accepted: JSON = client.post(f"/slas/{sla_id}/baseline-acceptances", json=body)
    return accepted
