"""`/api/v1/traces/{id}/timeline...` (windows, overview, steps, search, gaps, area
summaries, counter tracks), event detail and flows, and the trace's events as Chrome-trace
JSON or as the Parquet file they are stored in."""

from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Depends, Query
from fastapi.responses import FileResponse, Response, StreamingResponse

from backend.api.access import require
from backend.api.deps import SessionDep
from backend.models.timeline import (
    INT64_MAX,
    AreaSummary,
    Counters,
    EventDetail,
    EventFlows,
    GapsPublic,
    SearchResult,
    StepMarkerChoice,
    StepsPublic,
    TimelineLanes,
    TimelineOverview,
    TimelineWindow,
)
from backend.services import timeline as service
from backend.services.auth import CHANGE_TRACE
from backend.services.datasets import events_file
from backend.services.errors import InvalidInputError
from backend.services.traces import export_chrome_trace

router = APIRouter(prefix="/traces", tags=["timeline"])
# Times are int64 ns in the dataset: a bound past that range is refused here, with a 422.
_NS = Query(ge=-INT64_MAX, le=INT64_MAX, description="Absolute time, ns.")
Ns = Annotated[int, _NS]
OptionalNs = Annotated[int | None, _NS]


def _lane_ids(lanes: str | None) -> list[int] | None:
    if lanes is None or not lanes.strip():
        return None
    try:
        return [int(part) for part in lanes.split(",") if part.strip()]
    except ValueError as e:
        raise InvalidInputError(f"lanes must be comma-separated lane ids, got {lanes!r}") from e


def _window_query(
    start_ns: int | None = None,
    end_ns: int | None = None,
    max_items: Annotated[int, Query(ge=1, le=100_000)] = service.DEFAULT_MAX_ITEMS,
    lanes: Annotated[str | None, Query(description="Comma-separated lane ids.")] = None,
) -> dict[str, Any]:
    """The query of a window, shared by its JSON and column forms."""
    return {"start_ns": start_ns, "end_ns": end_ns, "max_items": max_items,
            "lanes": _lane_ids(lanes)}  # fmt: skip


WindowQuery = Annotated[dict[str, Any], Depends(_window_query)]


@router.get("/{trace_id}/timeline")
def get_timeline(trace_id: str, session: SessionDep, window: WindowQuery) -> TimelineWindow:
    """At most max_items drawable items of the window: merged busy blocks or raw events."""
    return service.get_window(session=session, trace_id=trace_id, **window)


@router.get("/{trace_id}/timeline/lanes")
def get_timeline_lanes(trace_id: str, session: SessionDep) -> TimelineLanes:
    """The drawable lanes (display order) and the trace's time range."""
    return service.get_lanes(session=session, trace_id=trace_id)


@router.get(
    "/{trace_id}/timeline/columns",
    response_class=Response,
    responses={200: {"content": {"application/json": {}}}},
)
def get_timeline_columns(trace_id: str, session: SessionDep, window: WindowQuery) -> Response:
    """The window of `GET .../timeline` as parallel arrays (the canvas renderer's form):
    times are ns offsets from `trace_start_ns` (a decimal string), names and categories
    indexes into their tables, `id` -1 for merged blocks, `mix` 4 numbers per item (ns of
    compute, communication, memcpy, memset in a merged GPU block). No hover args."""
    items = service.window_items(session=session, trace_id=trace_id, **window)
    return Response(orjson.dumps(service.window_columns(items)), media_type="application/json")


@router.get("/{trace_id}/timeline/overview")
def get_timeline_overview(
    trace_id: str, session: SessionDep, bins: Annotated[int, Query(ge=1, le=5000)] = 400
) -> TimelineOverview:
    """GPU utilisation over the whole trace, in equal bins."""
    return service.get_overview(session=session, trace_id=trace_id, bins=bins)


@router.get("/{trace_id}/timeline/steps")
def get_timeline_steps(
    trace_id: str,
    session: SessionDep,
    step_marker: Annotated[
        str | None,
        Query(min_length=1, max_length=512, description="Try this step marker (not kept)."),
    ] = None,
) -> StepsPublic:
    """The step windows, for jumping to a step, and the marker they come from."""
    return service.list_steps(session=session, trace_id=trace_id, marker=step_marker)


@router.put("/{trace_id}/step-marker", dependencies=[Depends(require(CHANGE_TRACE))])
def put_step_marker(trace_id: str, choice: StepMarkerChoice, session: SessionDep) -> StepsPublic:
    """Keep a step marker for the trace (null: automatic) and re-derive its step times."""
    return service.set_step_marker(session=session, trace_id=trace_id, marker=choice.marker)


@router.get("/{trace_id}/timeline/search")
def search_timeline(
    trace_id: str,
    session: SessionDep,
    q: Annotated[str, Query(min_length=1, max_length=200)],
    start_ns: int | None = None,
    end_ns: int | None = None,
    limit: Annotated[int, Query(ge=1, le=5000)] = 200,
) -> SearchResult:
    """Event names containing q, and where the first matches are in the window."""
    return service.search(
        session=session, trace_id=trace_id, query=q, start_ns=start_ns, end_ns=end_ns,
        limit=limit,
    )  # fmt: skip


@router.get("/{trace_id}/timeline/gaps")
def get_timeline_gaps(
    trace_id: str,
    session: SessionDep,
    min_ns: Annotated[int, Query(ge=10_000)] = 100_000,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 50,
) -> GapsPublic:
    """Idle gaps on GPU lanes, longest first, classified host/launch/sync-bound."""
    return service.list_gaps(session=session, trace_id=trace_id, min_ns=min_ns, limit=limit)


@router.get("/{trace_id}/events/{event_id}")
def get_event(trace_id: str, event_id: int, session: SessionDep) -> EventDetail:
    """One event with its args, its CPU launch and its kernel's stats."""
    return service.get_event_detail(session=session, trace_id=trace_id, event_id=event_id)


@router.get("/{trace_id}/events/{event_id}/flows")
def get_event_flows(
    trace_id: str,
    event_id: int,
    session: SessionDep,
    limit: Annotated[int, Query(ge=1, le=5000)] = 500,
) -> EventFlows:
    """Flow arrows at an event: CPU launch -> GPU work, and collective peers on other ranks."""
    return service.get_event_flows(
        session=session, trace_id=trace_id, event_id=event_id, limit=limit
    )


@router.get("/{trace_id}/timeline/area")
def get_timeline_area(
    trace_id: str,
    session: SessionDep,
    start_ns: Ns,
    end_ns: Ns,
    lanes: Annotated[str | None, Query(description="Comma-separated lane ids.")] = None,
    limit: Annotated[int, Query(ge=1, le=5000)] = 500,
) -> AreaSummary:
    """The events of the lanes overlapping [start_ns, end_ns), summed per name and category."""
    return service.get_area_summary(
        session=session, trace_id=trace_id, start_ns=start_ns, end_ns=end_ns,
        lanes=_lane_ids(lanes), limit=limit,
    )  # fmt: skip


@router.get("/{trace_id}/timeline/counters")
def get_timeline_counters(
    trace_id: str,
    session: SessionDep,
    start_ns: OptionalNs = None,
    end_ns: OptionalNs = None,
    bins: Annotated[int, Query(ge=1, le=5000)] = 400,
) -> Counters:
    """Counter tracks of the window in equal bins: GPU utilisation, allocated/reserved memory."""
    return service.get_counters(
        session=session, trace_id=trace_id, start_ns=start_ns, end_ns=end_ns, bins=bins
    )


@router.get("/{trace_id}/export.json", response_class=StreamingResponse)
def export_trace(trace_id: str, session: SessionDep) -> StreamingResponse:
    """The trace as Chrome trace JSON (opens in Perfetto UI), whatever its source format."""
    trace = service.ready_trace(session, trace_id)
    session.expunge(trace)
    body = export_chrome_trace(trace)
    filename = f"{trace_id}.trace.json"
    headers = {"Content-Disposition": f'attachment; filename="{filename}"'}
    return StreamingResponse(body, media_type="application/json", headers=headers)


@router.get(
    "/{trace_id}/events.parquet",
    response_class=FileResponse,
    responses={200: {"content": {"application/vnd.apache.parquet": {}}}},
)
def download_events(trace_id: str, session: SessionDep) -> FileResponse:
    """The trace's stored events as the zstd Parquet file perfdash reads them from, for
    pandas, polars or DuckDB (schema: docs/ARCHITECTURE.md, "Columnar trace store")."""
    trace = service.ready_trace(session, trace_id)
    return FileResponse(
        events_file(trace),
        media_type="application/vnd.apache.parquet",
        filename=f"{trace_id}.events.parquet",
    )
