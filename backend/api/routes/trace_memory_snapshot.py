"""`/traces/{id}/memory-snapshot` and its views: a PyTorch memory snapshot's segment map,
fragmentation, allocated/reserved over time, top stacks at the peak, and peaks by phase.

Served for a trace that is a snapshot (format `torch_memory_snapshot`) or was uploaded
together with one; 404 for any other trace. Each view is a slice of what the ingest
computed (`backend.services.analysis.memory_snapshot`).
"""

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query

from backend.api.deps import MAX_OFFSET, SessionDep
from backend.services import analysis

router = APIRouter(prefix="/traces/{trace_id}/memory-snapshot", tags=["analyses"])
Device = Annotated[
    int | None, Query(ge=0, le=4095, description="GPU ordinal; default: the first device.")
]
JSON = dict[str, Any]


@router.get("")
def get_snapshot_summary(trace_id: str, session: SessionDep, device: Device = None) -> JSON:
    """Totals at the history's start, at the allocated peak and at dump time, and notes."""
    return analysis.read_snapshot_summary(session=session, trace_id=trace_id, device=device)


@router.get("/segments")
def get_snapshot_segments(
    trace_id: str,
    session: SessionDep,
    device: Device = None,
    at: Annotated[Literal["peak", "dump"], Query(description="Which moment's map.")] = "peak",
    limit: Annotated[int, Query(ge=1, le=5000)] = 1000,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
) -> JSON:
    """Segments by address with their allocated blocks and free holes."""
    return analysis.read_snapshot_segments(
        session=session, trace_id=trace_id, device=device, at=at, limit=limit, offset=offset
    )


@router.get("/fragmentation")
def get_snapshot_fragmentation(trace_id: str, session: SessionDep, device: Device = None) -> JSON:
    """Free bytes inside segments by hole size (log2 buckets), at the peak and at dump."""
    return analysis.read_snapshot_fragmentation(session=session, trace_id=trace_id, device=device)


@router.get("/timeline")
def get_snapshot_timeline(
    trace_id: str,
    session: SessionDep,
    device: Device = None,
    max_points: Annotated[int, Query(ge=10, le=4000)] = 2000,
) -> JSON:
    """Allocated, requested and reserved bytes after each allocator trace entry."""
    return analysis.read_snapshot_timeline(
        session=session, trace_id=trace_id, device=device, max_points=max_points
    )


@router.get("/stacks")
def get_snapshot_stacks(
    trace_id: str,
    session: SessionDep,
    device: Device = None,
    limit: Annotated[int, Query(ge=1, le=20)] = 10,
) -> JSON:
    """The allocation stacks holding the most bytes at the allocated peak."""
    return analysis.read_snapshot_stacks(
        session=session, trace_id=trace_id, device=device, limit=limit
    )


@router.get("/phases")
def get_snapshot_phases(
    trace_id: str,
    session: SessionDep,
    device: Device = None,
    limit: Annotated[int, Query(ge=1, le=2000)] = 500,
) -> JSON:
    """Each annotated phase (record_function) with the allocated peak inside it."""
    return analysis.read_snapshot_phases(
        session=session, trace_id=trace_id, device=device, limit=limit
    )
