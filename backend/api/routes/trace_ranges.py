"""Ranges and CUDA graphs: `/traces/{id}/ranges`, `/ranges/durations` and `/graphs`.

Computed on request from the stored events (`backend.services.analysis.ranges`, `.graphs`):
the NVTX / `record_function` range summary that `nsys stats --report nvtx_sum` prints, and
CUDA graph replays with the GPU work each ran.
"""

from typing import Annotated

from fastapi import APIRouter, Query

from backend.api.deps import SessionDep
from backend.models.ranges import GraphsPublic, RangeDurationsPublic, RangesPublic, Side
from backend.services import analysis

router = APIRouter(tags=["analyses"])


@router.get("/traces/{trace_id}/ranges")
def get_ranges(
    trace_id: str,
    session: SessionDep,
    side: Annotated[Side | None, Query(description="Only CPU or only GPU ranges.")] = None,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
) -> RangesPublic:
    """Per range name, domain and style: count, total, mean, median, min, max, std (ns)."""
    return analysis.compute_ranges(session=session, trace_id=trace_id, side=side, limit=limit)


@router.get("/traces/{trace_id}/ranges/durations")
def get_range_durations(
    trace_id: str,
    session: SessionDep,
    name: Annotated[str, Query(min_length=1, max_length=4096)],
    domain: Annotated[str | None, Query(max_length=4096)] = None,
    side: Side = "cpu",
    limit: Annotated[int, Query(ge=1, le=100_000)] = 5000,
) -> RangeDurationsPublic:
    """Start and duration of every instance of one range (the longest `limit`)."""
    return analysis.compute_range_durations(
        session=session, trace_id=trace_id, name=name, domain=domain, side=side, limit=limit
    )


@router.get("/traces/{trace_id}/graphs")
def get_graphs(
    trace_id: str,
    session: SessionDep,
    replays: Annotated[int, Query(ge=0, le=100_000)] = 1000,
) -> GraphsPublic:
    """CUDA graphs: per graph its launches (replays), kernels and GPU time per replay."""
    return analysis.compute_graphs(session=session, trace_id=trace_id, replays=replays)
