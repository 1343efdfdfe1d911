"""`/api/v1/metrics`: CI pushes (token with `metrics:write`), metric runs and series."""

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, HTTPException, Query, status

from backend.api.access import require
from backend.api.deps import Offset, SessionDep
from backend.models.metrics import MetricRunsPublic, NoiseBandPublic, SeriesPublic
from backend.services import benchmarks, metrics, series, slas
from backend.services.auth import PUSH_METRICS
from backend.services.metrics import FORMATS, MetricDocumentError, PushResult, push_metrics

router = APIRouter(prefix="/metrics", tags=["metrics"])
WriteToken = Annotated[object, Depends(require(PUSH_METRICS))]


@router.post("", responses={422: {"description": "Problems with their JSON paths"}})
def push(
    session: SessionDep,
    _token: WriteToken,
    doc: Annotated[dict[str, Any] | list[Any], Body(description="A metrics document.")],
    format: Annotated[str | None, Query(description=f"One of {', '.join(FORMATS)}")] = None,
    project: str | None = None,
    commit: str | None = None,
    branch: str | None = None,
    run_id: str | None = None,
    url: str | None = None,
    benchmark: str | None = None,
) -> PushResult:
    """Store metric points (idempotent, all or nothing) and return each affected SLA's verdict."""
    given = {
        "project": project,
        "commit": commit,
        "branch": branch,
        "run_id": run_id,
        "url": url,
        "benchmark": benchmark,
    }
    try:
        result = push_metrics(
            session, doc, fmt=format, defaults={k: v for k, v in given.items() if v}
        )
    except MetricDocumentError as e:
        problems = [{"path": p.path, "message": p.message} for p in e.problems]
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT, {"message": str(e), "problems": problems}
        ) from e
    benchmarks.start_from_verdicts(session, result.verdicts)  # a regression bisects itself
    return result


@router.get("/runs")
def list_runs(
    session: SessionDep,
    project: str | None = None,
    branch: str | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Offset = 0,
) -> MetricRunsPublic:
    """Recent metric runs, newest first, with their points and verdicts."""
    items, count, skipped = metrics.list_runs(
        session, project=project, branch=branch, limit=limit, offset=offset
    )
    return MetricRunsPublic(items=items, count=count, skipped=skipped)


@router.get("/series")
def get_series(
    session: SessionDep,
    project: str,
    benchmark: str,
    metric: str,
    branch: str | None = None,
    gpu: str | None = None,
    limit: Annotated[int, Query(ge=1, le=5000)] = 500,
) -> SeriesPublic:
    """One series over metric runs (oldest first) with change points and SLA thresholds."""
    found = series.get_series(
        session,
        project=project,
        benchmark=benchmark,
        metric=metric,
        branch=branch,
        environment={"gpu_model": gpu} if gpu else None,
        limit=limit,
    )
    return slas.add_series_slas(session, found)


@router.get("/series/noise")
def get_noise(
    session: SessionDep,
    project: Annotated[str, Query(min_length=1, max_length=128)],
    benchmark: Annotated[str, Query(min_length=1, max_length=256)],
    metric: Annotated[str, Query(min_length=1, max_length=128)],
    branch: Annotated[str | None, Query(max_length=256)] = None,
    gpu: Annotated[str | None, Query(max_length=128)] = None,
    runs: Annotated[int, Query(ge=1, le=1000, description="n1: runs judged")] = 1,
    baseline_runs: Annotated[int, Query(ge=1, le=1000, description="n2: baseline runs")] = 10,
) -> NoiseBandPublic:
    """A series' noise band from A/A runs: pooled within-commit spread, the minimum
    detectable change between `runs` and `baseline_runs` runs, and a bimodality warning."""
    return series.read_noise_band(
        session,
        project=project,
        benchmark=benchmark,
        metric=metric,
        branch=branch,
        environment={"gpu_model": gpu} if gpu else None,
        n_judged=runs,
        n_baseline=baseline_runs,
    )


@router.get("/facets")
def facets(session: SessionDep) -> dict[str, list[str]]:
    """Projects, branches and GPU models seen, for filters."""
    return metrics.facets(session)
