"""`/api/v1/traces`: upload, list, read, kernel stats, delete. A contract CI relies on."""

from typing import Annotated

from fastapi import APIRouter, File, Form, Query, Request, Response, UploadFile, status

from backend.api.deps import SessionDep, SettingsDep
from backend.models import (
    KernelStatPublic,
    KernelStatsPublic,
    TraceAccepted,
    TracePublic,
    TracesPublic,
)
from backend.services import traces as service
from backend.services.errors import TooLargeError

router = APIRouter(prefix="/traces", tags=["traces"])
MULTIPART_OVERHEAD = 64 * 1024


@router.post("", status_code=status.HTTP_202_ACCEPTED)
def upload_trace(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    file: Annotated[UploadFile, File(description="The trace file (.json, .json.gz, ...).")],
    name: Annotated[str | None, Form(max_length=512)] = None,
    project: Annotated[str, Form(max_length=128)] = "default",
) -> TraceAccepted:
    """Store a trace and queue it for parsing; the same bytes again return the same trace."""
    declared = int(request.headers.get("content-length") or 0)
    if declared > settings.max_upload_bytes + MULTIPART_OVERHEAD:
        raise TooLargeError(f"upload is larger than the {settings.max_upload_bytes}-byte limit")
    trace, duplicate = service.accept_upload(
        session=session,
        settings=settings,
        stream=file.file,
        name=name or file.filename or "trace",
        project=project,
    )
    return TraceAccepted(id=trace.id, status=trace.status, duplicate=duplicate)


@router.get("")
def list_traces(
    session: SessionDep,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0)] = 0,
    project: str | None = None,
) -> TracesPublic:
    """Traces, newest first."""
    rows, count = service.list_traces(session=session, limit=limit, offset=offset, project=project)
    return TracesPublic(items=[TracePublic.of(t) for t in rows], count=count)


@router.get("/{trace_id}")
def get_trace(trace_id: str, session: SessionDep) -> TracePublic:
    """One trace: status, format, error, event counts, devices and duration."""
    return TracePublic.of(service.get_trace(session=session, trace_id=trace_id))


@router.get("/{trace_id}/kernels")
def get_kernels(
    trace_id: str, session: SessionDep, limit: Annotated[int, Query(ge=1, le=100_000)] = 10
) -> KernelStatsPublic:
    """Kernels by total GPU time, with count, mean, min, max and % of kernel time."""
    rows, count, total = service.list_kernel_stats(session=session, trace_id=trace_id, limit=limit)
    items = [KernelStatPublic.model_validate(r, from_attributes=True) for r in rows]
    return KernelStatsPublic(trace_id=trace_id, items=items, count=count, total_kernel_ns=total)


@router.delete("/{trace_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_trace(trace_id: str, session: SessionDep, settings: SettingsDep) -> Response:
    """Delete the trace, its events and its stored bytes."""
    service.delete_trace(session=session, blob_dir=settings.blob_dir, trace_id=trace_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
