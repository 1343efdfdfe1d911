"""`/api/v1/traces`: upload, list, read, delete. A contract CI relies on.

The kernel stats and summary of a trace are served by `trace_aggregates`."""

from typing import Annotated, BinaryIO

from fastapi import APIRouter, Depends, File, Form, Query, Request, Response, UploadFile, status
from sqlmodel import Session

from backend.api.access import require
from backend.api.deps import Offset, SessionDep, SettingsDep
from backend.core.config import Settings
from backend.models import (
    Trace,
    TraceAccepted,
    TracePublic,
    TracesPublic,
    TraceStatus,
)
from backend.services import traces as service
from backend.services.auth import DELETE_TRACE, UPLOAD_TRACE
from backend.services.errors import TooLargeError
from backend.services.loading import read_progress
from backend.services.traces import bundle_uploads

router = APIRouter(prefix="/traces", tags=["traces"])
MULTIPART_OVERHEAD = 64 * 1024


@router.post(
    "", status_code=status.HTTP_202_ACCEPTED, dependencies=[Depends(require(UPLOAD_TRACE))]
)
def upload_trace(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    file: Annotated[
        list[UploadFile],
        File(
            description="The trace file (.json, .json.gz, .sqlite, .csv, .zip, .tar.gz, ...). "
            "Repeat the field to upload the rank files of one job as one multi-rank trace."
        ),
    ],
    name: Annotated[str | None, Form(max_length=512)] = None,
    project: Annotated[str, Form(max_length=128)] = "default",
    ranks: Annotated[
        bool,
        Form(
            description="The files are the ranks of one torch.profiler job: refuse the "
            "upload (422, naming the file) if one is not a torch.profiler trace, or two "
            "claim the same rank or different world sizes."
        ),
    ] = False,
) -> TraceAccepted:
    """Store a trace and queue it for parsing; the same bytes again return the same trace."""
    declared = int(request.headers.get("content-length") or 0)
    if declared > settings.max_upload_bytes + MULTIPART_OVERHEAD * len(file):
        raise TooLargeError(f"upload is larger than the {settings.max_upload_bytes}-byte limit")
    filenames = [f.filename or "" for f in file]
    service.check_upload_fields(name=name or "", project=project, filenames=filenames)
    if ranks:
        service.check_rank_files([(f.filename or "trace", f.file) for f in file])
    stream = _one_stream(file, settings)
    try:
        trace, duplicate = service.accept_upload(
            session=session,
            settings=settings,
            stream=stream,
            name=name or service.default_name(filenames),
            project=project,
        )
    finally:
        stream.close()
    return TraceAccepted(id=trace.id, status=trace.status, duplicate=duplicate)


def _one_stream(files: list[UploadFile], settings: Settings) -> BinaryIO:
    """The upload's bytes: the file itself, or several files bundled into one zip."""
    if len(files) == 1:
        return files[0].file
    parts = [(f.filename or "trace", f.file) for f in files]
    return bundle_uploads(parts, max_bytes=settings.max_upload_bytes)


@router.get("")
def list_traces(
    session: SessionDep,
    settings: SettingsDep,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Offset = 0,
    project: str | None = None,
) -> TracesPublic:
    """Traces, newest first."""
    rows, count = service.list_traces(session=session, limit=limit, offset=offset, project=project)
    return TracesPublic(items=[_public(session, settings, t) for t in rows], count=count)


@router.get("/{trace_id}")
def get_trace(trace_id: str, session: SessionDep, settings: SettingsDep) -> TracePublic:
    """One trace: status, format, error, event counts, devices, duration, and progress
    (`bytes_done`, `bytes_total`, `events`, `fraction`) while it is `processing`."""
    return _public(session, settings, service.get_trace(session=session, trace_id=trace_id))


def _public(session: Session, settings: Settings, trace: Trace) -> TracePublic:
    public = TracePublic.of(trace)
    if trace.status == TraceStatus.PROCESSING:
        public.progress = read_progress(session.get_bind(), settings, trace)  # type: ignore[arg-type]
    else:
        public.progress = None
    return public


@router.delete(
    "/{trace_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    dependencies=[Depends(require(DELETE_TRACE))],
)
def delete_trace(trace_id: str, session: SessionDep, settings: SettingsDep) -> Response:
    """Delete the trace, its events and its stored bytes."""
    service.delete_trace(session=session, blob_dir=settings.blob_dir, trace_id=trace_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
