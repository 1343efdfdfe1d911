"""Benchmark API calls and their response shapes, built on `ApiClient.get/post`.

Public surface: `list_specs`, `get_spec`, `list_runs`, `get_run`, `request_run`,
`list_runners`, `list_bisects`, and the TypedDicts they return.
"""

from __future__ import annotations

from typing import Any, TypedDict, cast

from dashboard.api.client import ApiClient

__all__ = [
    "UPSERT_SPEC_ROUTE",
    "BenchRun",
    "BenchRunList",
    "BenchSpec",
    "BenchSpecList",
    "Bisect",
    "BisectList",
    "BisectStep",
    "Metric",
    "ResultPoint",
    "Runner",
    "RunnerList",
    "get_run",
    "get_spec",
    "list_bisects",
    "list_queued_runs",
    "list_runners",
    "list_runs",
    "list_specs",
    "request_run",
]

# The route an empty Benchmarks page tells a user to try on the API docs page.
UPSERT_SPEC_ROUTE = "POST /api/v1/benchmarks"


class Metric(TypedDict, total=False):
    metric: str
    unit: str
    direction: str
    value: float | None
    samples: list[float]


class ResultPoint(TypedDict, total=False):
    label: str
    params: dict[str, Any]
    metrics: list[Metric]
    hash: str | None
    counts: dict[str, float]
    notes: dict[str, Any]
    timer: str


class BenchRun(TypedDict):
    id: str
    spec_id: int
    spec_name: str
    project: str
    queue: str
    status: str
    reason: str | None
    error: str | None
    trigger: str
    ref: str
    attempts: int
    runner: str | None
    spec_hash: str
    environment: dict[str, Any]
    warnings: list[str]
    flags: list[dict[str, Any]]
    determinism_hash: str | None
    results: list[ResultPoint]
    metric_run_ids: list[int]
    trace_id: str | None
    created_at: str
    started_at: str | None
    finished_at: str | None


class BenchRunList(TypedDict):
    items: list[BenchRun]
    count: int


class BenchSpec(TypedDict):
    id: int
    name: str
    project: str
    description: str
    kind: str
    workload: str
    command: list[str]
    params: dict[str, Any]
    sweep: dict[str, list[Any]]
    queue: str
    seed: int
    warmup: int
    iters: int
    profile: bool
    deterministic: str
    timeout_s: int
    schedule: str | None
    install: str | None
    settle: dict[str, float] | None
    spec_hash: str
    last_run: BenchRun | None


class BenchSpecList(TypedDict):
    items: list[BenchSpec]
    count: int


class Runner(TypedDict):
    name: str
    hostname: str
    queues: list[str]
    capabilities: dict[str, Any]
    online: bool
    live: bool
    started_at: str
    last_seen_at: str


class RunnerList(TypedDict):
    items: list[Runner]
    count: int


def list_specs(client: ApiClient) -> BenchSpecList:
    """Every spec with its latest run."""
    return cast(BenchSpecList, client.get("/benchmarks"))


def get_spec(client: ApiClient, name: str) -> BenchSpec:
    """One spec."""
    return cast(BenchSpec, client.get(f"/benchmarks/{name}"))


def list_runs(client: ApiClient, name: str, limit: int = 50) -> BenchRunList:
    """A spec's runs, newest first."""
    return cast(BenchRunList, client.get(f"/benchmarks/{name}/runs", params={"limit": limit}))


def list_queued_runs(client: ApiClient, limit: int = 100) -> BenchRunList:
    """Runs still waiting for a runner, newest first, each warning if none serves its queue."""
    params = {"status": "queued", "limit": limit}
    return cast(BenchRunList, client.get("/benchmark-runs", params=params))


def get_run(client: ApiClient, run_id: str) -> BenchRun:
    """One run with its results, environment and trace link."""
    return cast(BenchRun, client.get(f"/benchmark-runs/{run_id}"))


def request_run(client: ApiClient, name: str) -> BenchRun:
    """Queue a re-run of a spec."""
    return cast(BenchRun, client.post(f"/benchmarks/{name}/runs", json={}))


def list_runners(client: ApiClient) -> RunnerList:
    """Registered runners, live ones flagged."""
    return cast(RunnerList, client.get("/runners"))


class BisectStep(TypedDict):
    ref: str
    position: int
    role: str
    runs: list[str]
    verdict: str | None
    median: float | None
    n: int


class Bisect(TypedDict):
    id: str
    spec_name: str
    benchmark: str
    label: str
    metric: str
    good: str
    bad: str
    status: str
    error: str | None
    commits: list[str]
    commits_source: str
    steps: list[BisectStep]
    runs_used: int
    budget: int
    runner: str
    last_good: str | None
    first_bad: str | None
    trigger: str
    trace_diff: str | None
    created_at: str


class BisectList(TypedDict):
    items: list[Bisect]
    count: int


def list_bisects(client: ApiClient, name: str) -> BisectList:
    """A spec's bisects, newest first."""
    return cast(BisectList, client.get(f"/benchmarks/{name}/bisects"))
