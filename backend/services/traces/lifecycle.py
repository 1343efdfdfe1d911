"""Trace lifecycle rules: accept an upload and read it (the list: `listing`; edits and
deletes: `edits`; status changes: `states`)."""

import unicodedata
from collections.abc import Sequence
from typing import BinaryIO

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from backend.core.config import Settings
from backend.core.queue import try_enqueue
from backend.core.task_names import INGEST_QUEUE, INGEST_TRACE
from backend.models import Trace
from backend.services.errors import InvalidInputError, NotFoundError
from backend.services.traces.blob_store import put_blob
from backend.services.traces.states import INITIAL

NAME_MAX_CHARS = 512  # the columns' widths (`Trace`)
PROJECT_MAX_CHARS = 128


def check_upload_fields(*, name: str, project: str, filenames: Sequence[str] = ()) -> None:
    """Refuse, before a byte is stored, names the database cannot hold or a page cannot
    show on one line: control characters (NUL among them), lone surrogates, and names
    longer than their column. A file name only needs to be text: the trace's default
    name is cut to fit (`default_name`).

    Raises:
        InvalidInputError: naming the field and what is wrong with it.
    """
    for field, value, limit in (
        ("name", name, NAME_MAX_CHARS),
        ("project", project, PROJECT_MAX_CHARS),
        *(("filename", f, None) for f in filenames),
    ):
        check_printable(field, value, limit)


def check_printable(field: str, value: str, limit: int | None, allowed: str = "") -> None:
    """Refuse control characters (but those in `allowed`), lone surrogates and text
    longer than `limit` characters.

    Raises:
        InvalidInputError: naming `field` and the first character or length that is wrong.
    """
    bad = next(
        (
            i
            for i, c in enumerate(value)
            if c not in allowed and unicodedata.category(c) in ("Cc", "Cs")
        ),
        -1,
    )
    if bad >= 0:
        raise InvalidInputError(
            f"{field}: character {bad + 1} is U+{ord(value[bad]):04X}, a control "
            "character; it must be printable text"
        )
    if limit is not None and len(value) > limit:
        raise InvalidInputError(f"{field}: {len(value)} characters, over the {limit} allowed")


def default_name(filenames: Sequence[str]) -> str:
    """The name of a trace uploaded without one: its file name, cut to fit the column.

    >>> default_name(["a.json"]), default_name(["r0.json", "r1.json", "r2.json"])
    ('a.json', 'r0.json + 2 more')
    """
    first = filenames[0] if filenames and filenames[0] else "trace"
    more = f" + {len(filenames) - 1} more" if len(filenames) > 1 else ""
    return first[: NAME_MAX_CHARS - len(more)] + more


def accept_upload(
    *, session: Session, settings: Settings, stream: BinaryIO, name: str, project: str
) -> tuple[Trace, bool]:
    """Check the names, store the bytes, create a queued trace, commit, then enqueue its
    ingest. A blob whose row is never committed (the database failed, or the process
    died) is removed by the blob sweeper (`backend.services.traces.blob_sweep`).

    Returns:
        The trace and whether it already existed (same bytes uploaded before).

    Raises:
        InvalidInputError: a bad name or project (nothing stored), or an empty stream.
    """
    check_upload_fields(name=name, project=project)
    blob = put_blob(settings.blob_dir, stream, max_bytes=settings.max_upload_bytes)
    existing = session.exec(select(Trace).where(Trace.blob_sha256 == blob.sha256)).first()
    if existing is not None:
        return existing, True
    trace = Trace(
        name=name,
        project=project,
        blob_sha256=blob.sha256,
        size_bytes=blob.size_bytes,
        status=INITIAL,
    )
    session.add(trace)
    try:
        session.commit()
    except IntegrityError:  # a concurrent upload of the same bytes won the race
        session.rollback()
        winner = session.exec(select(Trace).where(Trace.blob_sha256 == blob.sha256)).one()
        return winner, True
    session.refresh(trace)
    # The row is committed: if the broker is down it stays queued and the sweeper re-sends it.
    try_enqueue(INGEST_TRACE, trace.id, queue=INGEST_QUEUE)
    return trace, False


def get_trace(*, session: Session, trace_id: str) -> Trace:
    """Return the trace or raise NotFoundError."""
    trace = session.get(Trace, trace_id)
    if trace is None:
        raise NotFoundError(f"trace {trace_id} not found")
    return trace
