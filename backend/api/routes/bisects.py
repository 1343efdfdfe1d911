"""`/api/v1/benchmarks/{name}/bisects` and `/api/v1/bisects/{id}`: confirm a regression
between two commits on one runner and bisect to the commit that caused it (issue 22).

Starting one queues benchmark runs, so it needs what queuing a run needs (`bench:run`),
and an admin for refs off the spec's allowed branches (`allow_any_ref`).
"""

from fastapi import APIRouter, Depends, status

from backend.api.access import IdentityDep, approve_any_ref, require
from backend.api.deps import SessionDep, SettingsDep
from backend.models.bisects import BisectCreate, BisectPublic, BisectsPublic
from backend.services.auth import RUN_BENCHMARK
from backend.services.benchmarks import get_bisect, list_bisects, start_bisect

router = APIRouter(prefix="/benchmarks", tags=["bisects"])
bisects_router = APIRouter(prefix="/bisects", tags=["bisects"])


@router.post(
    "/{name}/bisects",
    status_code=status.HTTP_202_ACCEPTED,
    dependencies=[Depends(require(RUN_BENCHMARK))],
)
def create_bisect(
    name: str, body: BisectCreate, session: SessionDep, settings: SettingsDep, identity: IdentityDep
) -> BisectPublic:
    """Confirm good vs bad on one live runner, then bisect the commits between them."""
    approver = approve_any_ref(identity, settings.auth) if body.allow_any_ref else None
    return get_bisect(session, start_bisect(session, name, body, ref_approved_by=approver).id)


@router.get("/{name}/bisects")
def list_spec_bisects(name: str, session: SessionDep) -> BisectsPublic:
    """The spec's bisects, newest first."""
    items = list_bisects(session, name)
    return BisectsPublic(items=items, count=len(items))


@bisects_router.get("/{bisect_id}")
def read_bisect(bisect_id: str, session: SessionDep) -> BisectPublic:
    """One bisect: state, steps (commit, runs, median, verdict), result, trace diff."""
    return get_bisect(session, bisect_id)
