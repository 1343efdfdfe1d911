"""Analyses: `/traces/{id}/roofline`, `/memory`, `/findings`, `/operators`, and
`/compare?a=&b=`.

Computed on request from stored rows (`backend.services.analysis`), unlike the summary and
kernel stats that ingest aggregated once (`trace_aggregates`). Everything the trace and
compare pages draw beyond those, as JSON a script can fetch too.
"""

from typing import Annotated, Literal

from fastapi import APIRouter, Query
from fastapi.responses import PlainTextResponse

from backend.api.deps import SessionDep
from backend.models.analyses import ComparePublic, FindingsPublic, MemoryPublic, RooflinePublic
from backend.models.operators import OperatorSort, OperatorsPublic, OperatorStacksPublic
from backend.services import analysis

router = APIRouter(tags=["analyses"])


@router.get("/traces/{trace_id}/roofline")
def get_roofline(trace_id: str, session: SessionDep, points: bool = True) -> RooflinePublic:
    """Roofs per device and one point per kernel (measured from counters, or estimated)."""
    return analysis.compute_roofline(session=session, trace_id=trace_id, with_points=points)


@router.get("/traces/{trace_id}/memory")
def get_memory(
    trace_id: str,
    session: SessionDep,
    max_points: Annotated[int, Query(ge=10, le=100_000)] = 2000,
) -> MemoryPublic:
    """Allocated and reserved memory over time per device, peaks and fragmentation."""
    return analysis.compute_memory(session=session, trace_id=trace_id, max_points=max_points)


@router.get("/traces/{trace_id}/findings")
def get_findings(trace_id: str, session: SessionDep) -> FindingsPublic:
    """Plain-language findings, each with the number that triggered it."""
    return analysis.compute_findings(session=session, trace_id=trace_id)


@router.get("/compare", response_model=None)
def compare_traces(
    session: SessionDep,
    a: Annotated[str, Query(description="The 'before' trace id.")],
    b: Annotated[str, Query(description="The 'after' trace id.")],
    tokens_per_step: Annotated[float | None, Query(gt=0)] = None,
    format: Annotated[Literal["json", "markdown"], Query()] = "json",
) -> ComparePublic | PlainTextResponse:
    """Trace A against trace B; `format=markdown` returns the report as text/markdown."""
    result = analysis.compute_compare(
        session=session, a_id=a, b_id=b, tokens_per_step=tokens_per_step
    )
    if format == "markdown":
        return PlainTextResponse(result.markdown, media_type="text/markdown; charset=utf-8")
    return result


@router.get("/traces/{trace_id}/operators")
def get_operators(
    trace_id: str,
    session: SessionDep,
    limit: Annotated[int, Query(ge=1, le=5000)] = 100,
    sort: Annotated[OperatorSort, Query(description="The field sorted by.")] = "device_total_ns",
    order: Annotated[Literal["desc", "asc"], Query()] = "desc",
    q: Annotated[str, Query(max_length=500, description="Name contains (any case).")] = "",
    group: Annotated[
        Literal["name", "shape"],
        Query(description="One row per name, or per name and input shapes."),
    ] = "name",
) -> OperatorsPublic:
    """Per-op calls, CPU and device total/self time and launched kernels, as torch's
    `key_averages()` computes them."""
    return analysis.compute_operators(
        session=session,
        trace_id=trace_id,
        limit=limit,
        sort=sort,
        descending=order == "desc",
        q=q.strip(),
        group=group,
    )


@router.get("/traces/{trace_id}/operators/stacks")
def get_operator_stacks(
    trace_id: str,
    session: SessionDep,
    max_nodes: Annotated[int, Query(ge=1, le=20_000)] = 2000,
) -> OperatorStacksPublic:
    """CPU time by Python call stack (with_stack) and by nn.Module (with_modules), as trees;
    each empty with a reason when the trace lacks it."""
    return analysis.compute_stacks(session=session, trace_id=trace_id, max_nodes=max_nodes)
