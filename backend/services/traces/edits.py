"""Changing traces after upload: rename, tag, annotate, and delete one or many.

Tags are normalized so that a filter matches them exactly on every database
(`backend.services.traces.listing`): trimmed, lower-cased, inner spaces turned into `-`,
then limited to ASCII letters, digits and `._:/+=@-` (no quote or backslash, which JSON
would escape), duplicates dropped in order.

Public surface: `normalize_tags`, `update_trace`, `delete_traces`, `delete_trace`, and the
limits `TAGS_MAX`, `TAG_MAX_CHARS`, `NOTE_MAX_CHARS`, `DELETE_MAX`.
"""

import re
from collections.abc import Sequence
from pathlib import Path

from sqlmodel import Session, col, select

from backend.core.clock import utc_now
from backend.models.traces import Trace, TraceUpdate
from backend.services.datasets import remove_trace_datasets
from backend.services.errors import InvalidInputError, NotFoundError
from backend.services.traces.blob_store import delete_blob
from backend.services.traces.lifecycle import NAME_MAX_CHARS, check_printable, get_trace

TAGS_MAX = 20
TAG_MAX_CHARS = 40
NOTE_MAX_CHARS = 4000
DELETE_MAX = 500
_TAG = re.compile(r"[a-z0-9._:/+=@-]+")


def normalize_tags(tags: Sequence[str]) -> list[str]:
    """Tags in their stored form, in the order given, without duplicates or empties.

    >>> normalize_tags(["  FP8 ", "H200", "fp8", "", "run 42"])
    ['fp8', 'h200', 'run-42']

    Raises:
        InvalidInputError: a tag too long or with a character outside the allowed set,
            or more than `TAGS_MAX` tags.
    """
    found: list[str] = []
    for i, raw in enumerate(tags):
        tag = "-".join(raw.strip().lower().split())
        if len(tag) > TAG_MAX_CHARS:
            raise InvalidInputError(
                f"tags[{i}]: {len(tag)} characters, over the {TAG_MAX_CHARS} allowed"
            )
        if tag and not _TAG.fullmatch(tag):
            bad = next(c for c in tag if not _TAG.fullmatch(c))
            raise InvalidInputError(
                f"tags[{i}]: {bad!r} is not allowed; use letters, digits and . _ : / + = @ -"
            )
        if tag and tag not in found:
            found.append(tag)
    if len(found) > TAGS_MAX:
        raise InvalidInputError(f"tags: {len(found)} tags, over the {TAGS_MAX} allowed")
    return found


def update_trace(*, session: Session, trace_id: str, update: TraceUpdate) -> Trace:
    """Apply the fields `update` sets (name, tags, note), check them all first, commit.

    Raises:
        NotFoundError: no such trace.
        InvalidInputError: a blank or unprintable name, a bad tag, an unprintable note;
            nothing is changed.
    """
    trace = get_trace(session=session, trace_id=trace_id)
    changes: dict[str, object] = {}
    if update.name is not None:
        name = update.name.strip()
        if not name:
            raise InvalidInputError("name: must not be blank")
        check_printable("name", name, NAME_MAX_CHARS)
        changes["name"] = name
    if update.tags is not None:
        changes["tags"] = normalize_tags(update.tags)
    if update.note is not None:
        check_printable("note", update.note, NOTE_MAX_CHARS, allowed="\n\t\r")
        changes["note"] = update.note.strip() or None
    for field, value in changes.items():
        setattr(trace, field, value)
    if changes:
        trace.updated_at = utc_now()
        session.add(trace)
        session.commit()
        session.refresh(trace)
    return trace


def delete_traces(*, session: Session, blob_dir: Path, trace_ids: Sequence[str]) -> list[str]:
    """Delete every trace named, or none: their rows (and by cascade their index and
    stats) in one transaction, then their datasets and blobs.

    Files go only after the commit, so a failed delete leaves every trace whole; a file
    left behind by a crash after it is removed by the blob and dataset sweepers.

    Returns:
        The ids deleted, each once, in the order given.

    Raises:
        NotFoundError: some id names no trace (they are listed); nothing is deleted.
    """
    ids = list(dict.fromkeys(trace_ids))
    rows = list(session.exec(select(Trace).where(col(Trace.id).in_(ids))))
    missing = sorted(set(ids) - {t.id for t in rows})
    if missing:
        more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
        raise NotFoundError(f"no trace with id {', '.join(missing[:10])}{more}; none deleted")
    shas = {t.id: t.blob_sha256 for t in rows}
    for trace in rows:
        session.delete(trace)
    session.commit()
    for trace_id in ids:
        remove_trace_datasets(blob_dir, trace_id)
        delete_blob(blob_dir, shas[trace_id])
    return ids


def delete_trace(*, session: Session, blob_dir: Path, trace_id: str) -> None:
    """Delete one trace, its index and stats, its dataset and its blob.

    Raises:
        NotFoundError: no such trace.
    """
    get_trace(session=session, trace_id=trace_id)  # its own 404 message
    delete_traces(session=session, blob_dir=blob_dir, trace_ids=[trace_id])
