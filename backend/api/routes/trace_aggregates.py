"""`/api/v1/traces/{id}/summary` and `/kernels`: what ingest aggregated and stored, read back.

Both were computed in the one pass over the events (`ingest.aggregate.TraceAggregator`)
and are only read back here, unlike the analyses of `trace_analyses`.

Extends the `/traces` contract: `/kernels` keeps `items`, `count`, `total_kernel_ns` and
`limit`, and adds paging, sorting, search and grouping.
"""

from typing import Annotated

from fastapi import APIRouter, Query

from backend.api.deps import Offset, SessionDep
from backend.models.kernel_stats import KernelGroupBy, KernelSort, KernelStatsPublic
from backend.models.trace_summary import TraceSummaryPublic
from backend.models.traces import TraceStatus
from backend.services.traces import get_trace, list_kernel_stats

router = APIRouter(prefix="/traces", tags=["traces"])


@router.get("/{trace_id}/summary")
def get_summary(trace_id: str, session: SessionDep) -> TraceSummaryPublic:
    """Trace summary: time split, overlaps, steps, launch delay, memory, transfers, gaps."""
    trace = get_trace(session=session, trace_id=trace_id)
    ready = trace.status == TraceStatus.READY
    return TraceSummaryPublic(
        trace_id=trace_id, status=trace.status, summary=trace.summary if ready else None
    )


@router.get("/{trace_id}/kernels")
def get_kernels(
    trace_id: str,
    session: SessionDep,
    limit: Annotated[int, Query(ge=1, le=100_000)] = 10,
    offset: Offset = 0,
    sort: KernelSort = KernelSort.TOTAL,
    group: KernelGroupBy = KernelGroupBy.NAME,
    q: Annotated[str | None, Query(max_length=512, description="Name contains (any case).")] = None,
) -> KernelStatsPublic:
    """Kernel stats by name (or per stream, device, rank, launching CPU op), paged."""
    return list_kernel_stats(
        session=session,
        trace_id=trace_id,
        group=group,
        sort=sort,
        q=q,
        limit=limit,
        offset=offset,
    )
