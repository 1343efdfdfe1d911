"""SLA definitions: create, replace, delete, list, and `apply` (upsert by name with a diff).

`apply` is what `perfdash sla apply slas.yaml` calls through the API: the YAML in the
user's repository is the source of truth, and the answer says what changed.

Public surface: `list_slas`, `get_sla`, `create_sla`, `replace_sla`, `delete_sla`,
`apply_slas`, `ApplyResult`.
"""

from datetime import UTC, datetime
from typing import Any

from sqlmodel import Session, SQLModel, col, func, select

from backend.models.slas import Sla, SlaBase, SlaCreate
from backend.services.errors import InvalidInputError, NotFoundError

_DEFINITION = tuple(SlaBase.model_fields)


class ApplyResult(SQLModel):
    """What `apply` did: names created and unchanged, and each update's field changes."""

    created: list[str]
    updated: dict[str, dict[str, list[Any]]]
    unchanged: list[str]


def list_slas(
    session: Session, *, project: str | None = None, limit: int = 1000, offset: int = 0
) -> tuple[list[Sla], int]:
    """SLAs ordered by project, benchmark and name, and their total count."""
    query = select(Sla)
    count_query = select(func.count()).select_from(Sla)
    if project:
        query = query.where(Sla.project == project)
        count_query = count_query.where(Sla.project == project)
    query = query.order_by(col(Sla.project), col(Sla.benchmark), col(Sla.name))
    rows = list(session.exec(query.offset(offset).limit(limit)).all())
    return rows, session.exec(count_query).one()


def get_sla(session: Session, sla_id: str) -> Sla:
    """One SLA by id.

    Raises:
        NotFoundError: no such SLA.
    """
    sla = session.get(Sla, sla_id)
    if sla is None:
        raise NotFoundError(f"no SLA with id {sla_id!r}")
    return sla


def _by_name(session: Session, name: str) -> Sla | None:
    return session.exec(select(Sla).where(Sla.name == name)).first()


def create_sla(session: Session, data: SlaCreate) -> Sla:
    """Create an SLA.

    Raises:
        InvalidInputError: the name is taken.
    """
    if _by_name(session, data.name) is not None:
        raise InvalidInputError(f"an SLA named {data.name!r} exists; PUT it or use apply")
    sla = Sla.model_validate(data)
    session.add(sla)
    session.commit()
    session.refresh(sla)
    return sla


def _changes(sla: Sla, data: SlaCreate) -> dict[str, list[Any]]:
    return {
        f: [getattr(sla, f), getattr(data, f)]
        for f in _DEFINITION
        if getattr(sla, f) != getattr(data, f)
    }


def _update(sla: Sla, data: SlaCreate, changes: dict[str, list[Any]]) -> None:
    for field in changes:
        setattr(sla, field, getattr(data, field))
    # A new definition makes the cached status meaningless until the next push.
    if set(changes) - {"description", "severity", "name"}:
        sla.status = sla.status_changed_at = sla.last_observed = sla.last_threshold = None
        sla.sparkline = []
    sla.updated_at = datetime.now(UTC)


def replace_sla(session: Session, sla_id: str, data: SlaCreate) -> Sla:
    """Replace an SLA's definition (its history is kept).

    Raises:
        NotFoundError: no such SLA.
        InvalidInputError: the new name belongs to another SLA.
    """
    sla = get_sla(session, sla_id)
    other = _by_name(session, data.name)
    if other is not None and other.id != sla.id:
        raise InvalidInputError(f"an SLA named {data.name!r} exists")
    _update(sla, data, _changes(sla, data))
    session.add(sla)
    session.commit()
    session.refresh(sla)
    return sla


def delete_sla(session: Session, sla_id: str) -> None:
    """Delete an SLA and its evaluation history."""
    session.delete(get_sla(session, sla_id))
    session.commit()


def apply_slas(session: Session, items: list[SlaCreate], *, dry_run: bool = False) -> ApplyResult:
    """Upsert SLAs by name in one transaction and say what changed.

    Raises:
        InvalidInputError: a name appears twice.
    """
    names = [i.name for i in items]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InvalidInputError(f"SLA names must be unique; repeated: {', '.join(duplicates)}")
    existing = {s.name: s for s in session.exec(select(Sla).where(col(Sla.name).in_(names)))}
    result = ApplyResult(created=[], updated={}, unchanged=[])
    for item in items:
        sla = existing.get(item.name)
        if sla is None:
            result.created.append(item.name)
            session.add(Sla.model_validate(item))
            continue
        changes = _changes(sla, item)
        if not changes:
            result.unchanged.append(item.name)
            continue
        result.updated[item.name] = changes
        _update(sla, item, changes)
        session.add(sla)
    if dry_run:
        session.rollback()
    else:
        session.commit()
    return result
