"""The `/api/v1` router: one sub-router per noun."""

from fastapi import APIRouter

from backend.api.routes import (
    benchmarks,
    metrics,
    slas,
    timeline,
    trace_analysis,
    trace_views,
    traces,
    webhooks,
)

api_router = APIRouter(prefix="/api/v1")
api_router.include_router(traces.router)
api_router.include_router(trace_analysis.router)
api_router.include_router(trace_views.router)
api_router.include_router(metrics.router)
api_router.include_router(slas.router)
api_router.include_router(webhooks.router)
api_router.include_router(timeline.router)
api_router.include_router(benchmarks.router)
api_router.include_router(benchmarks.runs_router)
api_router.include_router(benchmarks.runners_router)
