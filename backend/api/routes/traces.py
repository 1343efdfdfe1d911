"""`/api/v1/traces`: upload, list (paged, sorted, filtered), read, edit, delete. A contract
CI relies on.

The kernel stats and summary of a trace are served by `trace_aggregates`."""

from datetime import UTC, datetime
from typing import Annotated, BinaryIO, Literal

from fastapi import APIRouter, Depends, File, Form, Query, Request, Response, UploadFile, status
from sqlmodel import Session

from backend.api.access import require
from backend.api.deps import Offset, SessionDep, SettingsDep
from backend.core.config import Settings
from backend.models.traces import (
    Trace,
    TraceAccepted,
    TraceFacets,
    TraceIds,
    TracePublic,
    TraceSort,
    TracesPublic,
    TraceStatus,
    TraceUpdate,
)
from backend.services import traces as service
from backend.services.auth import CHANGE_TRACE, DELETE_TRACE, UPLOAD_TRACE
from backend.services.errors import InvalidInputError, TooLargeError
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


def _utc(moment: datetime | None) -> datetime | None:
    """A time without a zone is UTC, as every stored time is."""
    if moment is None:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def trace_filter(
    project: Annotated[str | None, Query(max_length=128)] = None,
    format: Annotated[str | None, Query(max_length=32, description="e.g. torch_json")] = None,
    status: TraceStatus | None = None,
    tag: Annotated[str | None, Query(max_length=40, description="Has this tag.")] = None,
    q: Annotated[str | None, Query(max_length=512, description="Name contains (any case).")] = None,
    created_from: Annotated[
        datetime | None, Query(description="Created at or after (ISO 8601; no zone: UTC).")
    ] = None,
    created_to: Annotated[datetime | None, Query(description="Created before.")] = None,
) -> service.TraceFilter:
    """The list's filters from the query string; a reversed date range is a 422."""
    start, end = _utc(created_from), _utc(created_to)
    if start and end and start >= end:
        raise InvalidInputError(f"created_from ({start}) must be before created_to ({end})")
    tags = service.normalize_tags([tag]) if tag else []
    return service.TraceFilter(
        project=project, format=format, status=status, tag=tags[0] if tags else None, q=q,
        created_from=start, created_to=end,
    )  # fmt: skip


@router.get("")
def list_traces(
    session: SessionDep,
    settings: SettingsDep,
    where: Annotated[service.TraceFilter, Depends(trace_filter)],
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Offset = 0,
    sort: TraceSort = TraceSort.CREATED,
    order: Literal["asc", "desc"] = "desc",
) -> TracesPublic:
    """Traces, newest first unless `sort`/`order` say otherwise; `count` is over all pages."""
    rows, count = service.list_traces(
        session=session, limit=limit, offset=offset, where=where, sort=sort,
        descending=order == "desc",
    )  # fmt: skip
    return TracesPublic(items=[_public(session, settings, t) for t in rows], count=count)


@router.get("/facets")
def list_facets(session: SessionDep) -> TraceFacets:
    """The projects, formats and tags in use, for the list's filter pickers."""
    projects, formats, tags = service.list_facets(session=session)
    return TraceFacets(projects=projects, formats=formats, tags=tags)


@router.post("/delete", dependencies=[Depends(require(DELETE_TRACE))])
def delete_traces(body: TraceIds, session: SessionDep, settings: SettingsDep) -> TraceIds:
    """Delete up to 500 traces at once, all or none (404 naming the unknown ids)."""
    ids = service.delete_traces(session=session, blob_dir=settings.blob_dir, trace_ids=body.ids)
    return TraceIds(ids=ids)


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


@router.patch("/{trace_id}", dependencies=[Depends(require(CHANGE_TRACE))])
def update_trace(
    trace_id: str, body: TraceUpdate, session: SessionDep, settings: SettingsDep
) -> TracePublic:
    """Rename a trace, replace its tags or set its note; only the fields sent change."""
    trace = service.update_trace(session=session, trace_id=trace_id, update=body)
    return _public(session, settings, trace)
