"""The `/api/v1` router: one sub-router per noun."""

from fastapi import APIRouter, Depends

from backend.api.access import require
from backend.api.routes import (
    benchmarks,
    bisects,
    me,
    metrics,
    projects,
    slas,
    timeline,
    trace_aggregates,
    trace_analyses,
    trace_memory_snapshot,
    trace_query,
    trace_ranges,
    traces,
    webhooks,
)
from backend.services.auth import READ

# Every route needs at least READ: with AUTH on, anonymous callers reach none.
api_router = APIRouter(prefix="/api/v1", dependencies=[Depends(require(READ))])
api_router.include_router(me.router)
api_router.include_router(traces.router)
api_router.include_router(projects.router)
api_router.include_router(trace_aggregates.router)
api_router.include_router(trace_analyses.router)
api_router.include_router(trace_memory_snapshot.router)
api_router.include_router(trace_ranges.router)
api_router.include_router(trace_query.router)
api_router.include_router(metrics.router)
api_router.include_router(slas.router)
api_router.include_router(webhooks.router)
api_router.include_router(timeline.router)
api_router.include_router(benchmarks.router)
api_router.include_router(benchmarks.benchmark_runs_router)
api_router.include_router(benchmarks.runners_router)
api_router.include_router(bisects.router)
api_router.include_router(bisects.bisects_router)
