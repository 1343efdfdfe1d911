"""`/api/v1/slas`: SLA definitions (writes need `slas:write`), the board, history, and
accepted baselines."""

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Response, status

from backend.api.access import require
from backend.api.deps import Offset, SessionDep
from backend.models.slas import (
    SPARKLINE_LENGTH,
    BaselineAcceptanceCreate,
    BaselineAcceptancePublic,
    SlaCreate,
    SlaEvaluationPublic,
    SlaPublic,
    SlasPublic,
)
from backend.services import slas as service
from backend.services.auth import CHANGE_SLAS, Identity

router = APIRouter(prefix="/slas", tags=["slas"])
WriteToken = Annotated[object, Depends(require(CHANGE_SLAS))]
Writer = Annotated[Identity | None, Depends(require(CHANGE_SLAS))]


def _public(sla: Any) -> SlaPublic:
    return SlaPublic.model_validate(sla, from_attributes=True)


@router.get("")
def list_slas(
    session: SessionDep,
    project: str | None = None,
    limit: Annotated[int, Query(ge=1, le=5000)] = 1000,
    offset: Offset = 0,
) -> SlasPublic:
    """SLAs by project, benchmark and name."""
    rows, count = service.list_slas(session, project=project, limit=limit, offset=offset)
    return SlasPublic(items=[_public(s) for s in rows], count=count)


@router.post("", status_code=status.HTTP_201_CREATED)
def create_sla(session: SessionDep, _token: WriteToken, data: SlaCreate) -> SlaPublic:
    """Create an SLA (422 if the name is taken)."""
    return _public(service.create_sla(session, data))


@router.post("/apply")
def apply_slas(
    session: SessionDep, _token: WriteToken, items: list[SlaCreate], dry_run: bool = False
) -> service.ApplyResult:
    """Upsert SLAs by name in one transaction; the answer is the diff."""
    return service.apply_slas(session, items, dry_run=dry_run)


@router.get("/board")
def board(
    session: SessionDep,
    project: str | None = None,
    branch: str | None = None,
    gpu: str | None = None,
    spark: Annotated[int, Query(ge=0, le=SPARKLINE_LENGTH)] = SPARKLINE_LENGTH,
) -> list[dict[str, Any]]:
    """Every SLA with its status, last value, threshold, baseline, first bad commit (while
    failing) and a sparkline of recent values."""
    return service.read_board(session, project=project, branch=branch, gpu=gpu, spark=spark)


@router.get("/{sla_id}")
def get_sla(sla_id: str, session: SessionDep) -> SlaPublic:
    """One SLA."""
    return _public(service.get_sla(session, sla_id))


@router.put("/{sla_id}")
def replace_sla(sla_id: str, session: SessionDep, _token: WriteToken, data: SlaCreate) -> SlaPublic:
    """Replace an SLA's definition; its history is kept."""
    return _public(service.replace_sla(session, sla_id, data))


@router.delete("/{sla_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_sla(sla_id: str, session: SessionDep, _token: WriteToken) -> Response:
    """Delete an SLA and its history."""
    service.delete_sla(session, sla_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/{sla_id}/evaluations")
def evaluations(
    sla_id: str, session: SessionDep, limit: Annotated[int, Query(ge=1, le=5000)] = 100
) -> list[SlaEvaluationPublic]:
    """An SLA's verdicts, newest first."""
    service.get_sla(session, sla_id)
    rows = service.latest_evaluations(session, sla_id, limit)
    return [SlaEvaluationPublic.model_validate(r, from_attributes=True) for r in rows]


@router.post("/{sla_id}/baseline-acceptances", status_code=status.HTTP_201_CREATED)
def accept_baseline(
    sla_id: str, session: SessionDep, writer: Writer, data: BaselineAcceptanceCreate
) -> BaselineAcceptancePublic:
    """Accept a commit's level as the SLA's new baseline (default: where its open
    regression began); who, when and why are recorded."""
    who = writer.label if writer else "anonymous"
    return service.accept_baseline(session, sla_id, data, accepted_by=who)


@router.get("/{sla_id}/baseline-acceptances")
def baseline_acceptances(sla_id: str, session: SessionDep) -> list[BaselineAcceptancePublic]:
    """The SLA's accepted baselines, oldest first."""
    service.get_sla(session, sla_id)
    return service.list_acceptances(session, sla_id=sla_id)
