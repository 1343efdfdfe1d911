"""`/api/v1/benchmarks`, `/benchmark-runs` and `/runners`: specs, benchmark runs and GPU runners.

Callable and command specs and install hooks execute what they name on the runners, so
storing one needs an `admin` token or user, whatever AUTH says; other spec changes need
`benchmarks:write` or an admin, and re-runs `bench:run` or an uploader (anonymous with
AUTH=off, like uploads). A run at a ref off the spec's allowed branches needs an admin
who asks for it (`allow_any_ref`); the run records who (docs/SECURITY.md).
"""

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Response, status

from backend.api.access import IdentityDep, approve_any_ref, require
from backend.api.deps import Offset, SessionDep, SettingsDep
from backend.models.benchmarks import (
    AaBatchPublic,
    BenchmarkRunPublic,
    BenchmarkRunsPublic,
    BenchmarkSpecCreate,
    BenchmarkSpecPublic,
    BenchmarkSpecsPublic,
    RunnersPublic,
    RunRequestBody,
    RunStatus,
    SpecChange,
)
from backend.services import benchmarks as service
from backend.services.auth import (
    CHANGE_BENCHMARK,
    CHANGE_RUNNER_CODE,
    RUN_BENCHMARK,
    authorize,
)
from backend.services.benchmarks import list_runners, warn_unserved

router = APIRouter(prefix="/benchmarks", tags=["benchmarks"])
benchmark_runs_router = APIRouter(prefix="/benchmark-runs", tags=["benchmark_runs"])
runners_router = APIRouter(prefix="/runners", tags=["runners"])
Limit = Annotated[int, Query(ge=1, le=500)]


@router.get("")
def list_specs(session: SessionDep) -> BenchmarkSpecsPublic:
    """Every benchmark spec with its latest run."""
    items = service.list_specs(session)
    return BenchmarkSpecsPublic(items=items, count=len(items))


@router.post("", dependencies=[Depends(require(CHANGE_BENCHMARK))])
def upsert_spec(
    spec: BenchmarkSpecCreate, session: SessionDep, settings: SettingsDep, identity: IdentityDep
) -> SpecChange:
    """Create or update a spec by name; the answer lists the fields that changed."""
    if service.runs_user_code(spec):
        authorize(identity, CHANGE_RUNNER_CODE, settings.auth)
    return service.upsert_spec(session, spec)[1]


@router.get("/{name}")
def get_spec(name: str, session: SessionDep) -> BenchmarkSpecPublic:
    """One spec."""
    return BenchmarkSpecPublic.model_validate(service.get_spec(session, name), from_attributes=True)


@router.delete(
    "/{name}",
    status_code=status.HTTP_204_NO_CONTENT,
    dependencies=[Depends(require(CHANGE_BENCHMARK))],
)
def delete_spec(name: str, session: SessionDep) -> Response:
    """Delete a spec and its runs; metric points already pushed stay."""
    service.delete_spec(session, name)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post(
    "/{name}/runs",
    status_code=status.HTTP_202_ACCEPTED,
    dependencies=[Depends(require(RUN_BENCHMARK))],
)
def request_run(
    name: str,
    session: SessionDep,
    settings: SettingsDep,
    identity: IdentityDep,
    body: RunRequestBody | None = None,
) -> BenchmarkRunPublic:
    """Queue a run of the spec on its runner queue (optionally at a git ref); `repeat` N
    queues N runs of the ref (A/A runs for the noise band). Answers with the first run;
    `queued` lists every run queued, and `warnings` says so when no live runner consumes
    the spec's queue."""
    body = body or RunRequestBody()
    approver = approve_any_ref(identity, settings.auth) if body.allow_any_ref else None
    runs = service.request_run(
        session, name, trigger="api", ref=body.ref, repeat=body.repeat, ref_approved_by=approver
    )
    first = BenchmarkRunPublic.of(*service.get_run(session, runs[0].id))
    first = first.model_copy(update={"queued": [r.id for r in runs]})
    return warn_unserved(session, [first])[0]


@router.get("/{name}/runs")
def list_spec_runs(
    name: str, session: SessionDep, limit: Limit = 50, offset: Offset = 0
) -> BenchmarkRunsPublic:
    """The spec's runs, newest first."""
    items, count = service.list_runs(session, name=name, limit=limit, offset=offset)
    return BenchmarkRunsPublic(items=warn_unserved(session, items), count=count)


@benchmark_runs_router.get("")
def list_runs(
    session: SessionDep,
    limit: Limit = 50,
    offset: Offset = 0,
    status: RunStatus | None = None,
) -> BenchmarkRunsPublic:
    """All benchmark runs (or those of one `status`), newest first; a queued run on a queue
    no live runner consumes carries a warning."""
    items, count = service.list_runs(session, name=None, limit=limit, offset=offset, status=status)
    return BenchmarkRunsPublic(items=warn_unserved(session, items), count=count)


@benchmark_runs_router.get("/{run_id}/aa-batch")
def get_aa_batch(run_id: str, session: SessionDep, settings: SettingsDep) -> AaBatchPublic:
    """The A/A batch of a run (`--repeat N`): N, usable runs, replacements queued for
    flagged or failed ones within `PERFDASH_BENCH_AA_EXTRA_RUNS`, and its state."""
    run, _ = service.get_run(session, run_id)
    batch = service.batch_state(session, run.aa_group, settings.bench_aa_extra_runs)
    return AaBatchPublic.model_validate(batch, from_attributes=True)


@benchmark_runs_router.get("/{run_id}")
def get_run(run_id: str, session: SessionDep) -> BenchmarkRunPublic:
    """One run: status, reason, samples per sweep point, environment, hash, trace."""
    return warn_unserved(session, [BenchmarkRunPublic.of(*service.get_run(session, run_id))])[0]


@runners_router.get("")
def runners(session: SessionDep, live: bool = False) -> RunnersPublic:
    """GPU runners with their capabilities; `live=true` keeps those heard from lately."""
    items = list_runners(session, live_only=live)
    return RunnersPublic(items=items, count=len(items))
