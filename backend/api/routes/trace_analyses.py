"""Analyses: `/traces/{id}/roofline`, `/ncu`, `/memory` (and `/memory/ops`, `/memory/peak`),
`/findings`, `/operators`, `/compile`, `/steps/breakdown`, `/ranks`, `/collectives`, and
`/compare?a=&b=`.

Computed on request from stored rows (`backend.services.analysis`), unlike the summary and
kernel stats that ingest aggregated once (`trace_aggregates`). Everything the trace and
compare pages draw beyond those, as JSON a script can fetch too.
"""

from typing import Annotated, Literal

from fastapi import APIRouter, Query
from fastapi.responses import PlainTextResponse

from backend.api.deps import MAX_OFFSET, SessionDep
from backend.models.analyses import ComparePublic, FindingsPublic, MemoryPublic, RooflinePublic
from backend.models.compile import CompilePublic
from backend.models.memory_ops import MemoryOpsPublic, MemoryOpsSort, MemoryPeakPublic
from backend.models.ncu_sections import NcuSectionsPublic
from backend.models.operators import OperatorSort, OperatorsPublic, OperatorStacksPublic
from backend.models.ranks import CollectivesPublic, RanksPublic, StepBreakdownPublic
from backend.services import analysis

router = APIRouter(tags=["analyses"])


@router.get("/traces/{trace_id}/roofline")
def get_roofline(trace_id: str, session: SessionDep, points: bool = True) -> RooflinePublic:
    """Roofs per device and one point per kernel (measured from counters, or estimated)."""
    return analysis.compute_roofline(session=session, trace_id=trace_id, with_points=points)


@router.get("/traces/{trace_id}/ncu")
def get_ncu_sections(
    trace_id: str,
    session: SessionDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
    kernel: Annotated[int | None, Query(ge=0, description="One launch, by its ncu ID.")] = None,
) -> NcuSectionsPublic:
    """Nsight Compute sections per kernel launch: SOL, occupancy, memory, stalls, rules."""
    return analysis.compute_ncu_sections(
        session=session, trace_id=trace_id, limit=limit, ncu_id=kernel
    )


@router.get("/traces/{trace_id}/memory")
def get_memory(
    trace_id: str,
    session: SessionDep,
    max_points: Annotated[int, Query(ge=10, le=100_000)] = 2000,
) -> MemoryPublic:
    """Allocated and reserved memory over time per device, peaks and fragmentation."""
    return analysis.compute_memory(session=session, trace_id=trace_id, max_points=max_points)


DeviceQuery = Annotated[
    int | None,
    Query(
        ge=-1, le=4095, description="GPU ordinal, or -1 for host memory; default: the first GPU."
    ),
]
RankQuery = Annotated[int | None, Query(ge=0, description="Rank, in a trace of several.")]
GroupQuery = Annotated[
    Literal["op", "stack"], Query(description="`stack`: one row per op and Python stack.")
]


@router.get("/traces/{trace_id}/memory/ops")
def get_memory_ops(
    trace_id: str,
    session: SessionDep,
    device: DeviceQuery = None,
    rank: RankQuery = None,
    group: GroupQuery = "op",
    sort: Annotated[MemoryOpsSort, Query(description="Largest first; `name` A to Z.")] = (
        "alloc_bytes"
    ),
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
) -> MemoryOpsPublic:
    """Per op: allocations and frees made inside it, what it still held at the end and at
    the device's peak (each `[memory]` event given to the innermost op of its thread)."""
    return analysis.compute_memory_ops(
        session=session, trace_id=trace_id, device=device, rank=rank, group=group,
        sort=sort, limit=limit, offset=offset,
    )  # fmt: skip


@router.get("/traces/{trace_id}/memory/peak")
def get_memory_peak(
    trace_id: str,
    session: SessionDep,
    device: DeviceQuery = None,
    rank: RankQuery = None,
    group: GroupQuery = "op",
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
) -> MemoryPeakPublic:
    """The top allocators at the peak: allocations live at the device's highest allocated
    total, grouped by the op that made them, largest first."""
    return analysis.compute_memory_peak(
        session=session, trace_id=trace_id, device=device, rank=rank, group=group, limit=limit
    )


@router.get("/traces/{trace_id}/findings")
def get_findings(trace_id: str, session: SessionDep) -> FindingsPublic:
    """Plain-language findings, each with the number that triggered it."""
    return analysis.compute_findings(session=session, trace_id=trace_id)


@router.get("/traces/{trace_id}/steps/breakdown")
def get_step_breakdown(
    trace_id: str,
    session: SessionDep,
    window: Annotated[
        Literal["cpu", "gpu"],
        Query(description="A step's window: its CPU range, or the GPU extent of its work."),
    ] = "cpu",
) -> StepBreakdownPublic:
    """Per step and rank: compute, communication, memcpy, memset and idle; the spread."""
    return analysis.compute_step_breakdown(session=session, trace_id=trace_id, window=window)


@router.get("/traces/{trace_id}/ranks")
def get_ranks(trace_id: str, session: SessionDep) -> RanksPublic:
    """Per rank: the GPU split, comm/compute overlap, collective wait; the stragglers."""
    return analysis.compute_ranks(session=session, trace_id=trace_id)


@router.get("/traces/{trace_id}/collectives")
def get_collectives(trace_id: str, session: SessionDep) -> CollectivesPublic:
    """Per collective and message size: count, time, algbw/busbw and wait."""
    return analysis.compute_collectives(session=session, trace_id=trace_id)


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


@router.get("/traces/{trace_id}/compile")
def get_compile(
    trace_id: str,
    session: SessionDep,
    top: Annotated[int, Query(ge=1, le=1000, description="Phases listed, by time.")] = 10,
) -> CompilePublic:
    """torch.compile: top phases by time (inclusive and self), frame compiles, recompiles,
    inferred graph breaks, and compile time (union of top-level phases) against the span."""
    return analysis.compute_compile(session=session, trace_id=trace_id, top=top)
