"""The `benchmark spec`, `benchmark run` and `runner` nouns: what to run, each execution,
and the GPU workers that execute them.

A spec is validated structurally here (pydantic); rules that need code (cron syntax,
who may create a command spec) live in `backend.services.benchmarks.specs`.
"""

import re
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import field_validator, model_validator
from sqlalchemy import JSON, BigInteger, Column, DateTime, ForeignKey, Integer, String, Text
from sqlmodel import Field, SQLModel

from backend.core.clock import utc_now
from backend.core.git_refs import check_branch_pattern, check_ref

# SQLite only auto-increments an INTEGER PRIMARY KEY; PostgreSQL gets a real bigint.
_BigId = BigInteger().with_variant(Integer(), "sqlite")
# Kept in step with `workers.bench.workloads.BUILTINS` (+ allreduce) by a test.
BUILTIN_WORKLOADS = ("allreduce", "copy", "gemm", "sdpa", "train_step")
MAX_SWEEP_POINTS = 256
MAX_ALLOWED_BRANCHES = 32
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
# A `perfdash.workloads` entry-point name, or its `package.module:function` value.
_CALLABLE = re.compile(r"^[A-Za-z_][\w.-]*(?::[A-Za-z_]\w*)?$")
# `settle` options and their allowed ranges; the defaults live with the runner
# (`workers.bench.settle.SettleOptions`), a test keeps the names in step.
SETTLE_BOUNDS: dict[str, tuple[float, float]] = {
    "max_temp_c": (20, 95),
    "max_util_pct": (0, 100),
    "idle_timeout_s": (0, 600),
    "steady_timeout_s": (0, 600),
    "window_s": (0.1, 30),
    "clock_tolerance": (0.001, 0.5),
    "power_tolerance": (0.001, 0.5),
}


class WorkloadKind(StrEnum):
    BUILTIN = "builtin"
    CALLABLE = "callable"
    COMMAND = "command"


class RunStatus(StrEnum):
    """A run's state; the database, not Celery, is the source of truth."""

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


MAX_REPEAT = 50  # runs one request (or one schedule tick) may queue of the same ref


def _ts(nullable: bool) -> Any:
    return Field(
        default_factory=utc_now if not nullable else None,
        sa_column=Column(DateTime(timezone=True), nullable=nullable),
    )


class BenchmarkSpecBase(SQLModel):
    name: str = Field(max_length=128)
    project: str = Field(default="default", max_length=128)
    description: str = Field(default="", max_length=2000)
    kind: WorkloadKind = Field(default=WorkloadKind.BUILTIN, max_length=16)
    workload: str = Field(default="", max_length=512)
    command: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    output_file: str | None = Field(default=None, max_length=512)
    params: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    sweep: dict[str, list[Any]] = Field(
        default_factory=dict, sa_column=Column(JSON, nullable=False)
    )
    queue: str = Field(default="gpu", max_length=64)
    seed: int = Field(default=0, ge=0, le=2**31 - 1)
    warmup: int = Field(default=5, ge=0, le=10_000)
    iters: int = Field(default=20, ge=1, le=100_000)
    profile: bool = False
    deterministic: str = Field(default="warn", max_length=8)
    timeout_s: int = Field(default=1800, ge=10, le=3600)
    schedule: str | None = Field(default=None, max_length=128)
    install: str | None = Field(default=None, max_length=1024)
    # The branch the runs' metrics are filed under; SLA baselines default to `main`.
    branch: str = Field(default="main", max_length=256)
    # Branches (fnmatch patterns) whose commits a run at a ref may install; [] = [branch].
    allowed_branches: list[str] = Field(
        default_factory=list, sa_column=Column(JSON, nullable=False)
    )
    # Variables the install and the benchmark process get on top of the runner's allow-list.
    env: dict[str, str] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    # Wait for an idle, cool GPU and steady clocks before timing (issue #22); None: off.
    settle: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    # Each scheduled run is queued this many times (A/A runs of one ref: the noise band).
    aa_repeats: int = Field(default=1, ge=1, le=MAX_REPEAT)


class BenchmarkSpecCreate(BenchmarkSpecBase):
    """A spec as YAML or the API gives it; checked field by field."""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError("letters, digits, '_', '.', '-'; starting with a letter or digit")
        return value

    @field_validator("deterministic")
    @classmethod
    def _deterministic(cls, value: str) -> str:
        if value not in ("strict", "warn", "off"):
            raise ValueError("must be strict, warn or off")
        return value

    @field_validator("allowed_branches")
    @classmethod
    def _allowed_branches(cls, value: list[str]) -> list[str]:
        if len(value) > MAX_ALLOWED_BRANCHES:
            raise ValueError(f"at most {MAX_ALLOWED_BRANCHES} branch patterns")
        return [check_branch_pattern(v) for v in value]

    @field_validator("env")
    @classmethod
    def _env(cls, value: dict[str, str]) -> dict[str, str]:
        for name, item in value.items():
            if not _ENV_NAME.match(name) or name.upper().startswith("PERFDASH_"):
                raise ValueError(f"env.{name}: a name of letters, digits, '_'; not PERFDASH_*")
            if len(item) > 4096 or "\0" in item:
                raise ValueError(f"env.{name}: at most 4096 characters, no NUL")
        return value

    @field_validator("settle", mode="before")
    @classmethod
    def _settle(cls, value: Any) -> dict[str, float] | None:
        if value is None or value is False:
            return None
        if value is True:
            return {}
        if not isinstance(value, dict):
            raise ValueError("settle is true, false, or a mapping of options")
        out: dict[str, float] = {}
        for key, item in value.items():
            if key not in SETTLE_BOUNDS:
                raise ValueError(f"settle.{key}: unknown option; known: {', '.join(SETTLE_BOUNDS)}")
            low, high = SETTLE_BOUNDS[key]
            number = isinstance(item, int | float) and not isinstance(item, bool)
            if not number or not low <= item <= high:
                raise ValueError(f"settle.{key} must be a number from {low:g} to {high:g}")
            out[key] = float(item)
        return out

    @field_validator("sweep")
    @classmethod
    def _sweep(cls, value: dict[str, list[Any]]) -> dict[str, list[Any]]:
        points = 1
        for key, values in value.items():
            if not values:
                raise ValueError(f"sweep.{key} must be a non-empty list")
            points *= len(values)
        if points > MAX_SWEEP_POINTS:
            raise ValueError(f"the sweep has {points} points; the limit is {MAX_SWEEP_POINTS}")
        return value

    @model_validator(mode="after")
    def _workload(self) -> "BenchmarkSpecCreate":
        if self.kind == WorkloadKind.BUILTIN and self.workload not in BUILTIN_WORKLOADS:
            raise ValueError(f"workload must be one of {', '.join(BUILTIN_WORKLOADS)}")
        if self.kind == WorkloadKind.CALLABLE and not _CALLABLE.match(self.workload):
            raise ValueError(
                "a callable workload is a registered entry-point name or 'package.module:function'"
            )
        if self.kind == WorkloadKind.COMMAND and not (self.command and all(self.command)):
            raise ValueError("a command spec needs `command`, a non-empty list of arguments")
        if self.kind != WorkloadKind.COMMAND and (self.command or self.output_file):
            raise ValueError("`command` and `output_file` belong to command specs only")
        return self


class BenchmarkSpec(BenchmarkSpecBase, table=True):
    __tablename__ = "benchmark_specs"

    id: int | None = Field(default=None, sa_column=Column(_BigId, primary_key=True))
    name: str = Field(max_length=128, unique=True)
    kind: WorkloadKind = Field(
        default=WorkloadKind.BUILTIN, sa_column=Column(String(16), nullable=False)
    )
    spec_hash: str = Field(default="", max_length=64)
    last_scheduled_at: datetime | None = _ts(nullable=True)
    created_at: datetime = _ts(nullable=False)
    updated_at: datetime = _ts(nullable=False)


class BenchmarkSpecPublic(BenchmarkSpecBase):
    id: int
    spec_hash: str
    last_scheduled_at: datetime | None
    created_at: datetime
    updated_at: datetime
    last_run: "BenchmarkRunPublic | None" = None


class BenchmarkSpecsPublic(SQLModel):
    items: list[BenchmarkSpecPublic]
    count: int


class SpecChange(SQLModel):
    """What `apply` did to one spec, with the fields that changed (old, new)."""

    name: str
    action: str
    changes: dict[str, list[Any]] = {}


class BenchmarkRun(SQLModel, table=True):
    __tablename__ = "benchmark_runs"

    id: str = Field(primary_key=True, max_length=32)
    spec_id: int = Field(
        sa_column=Column(
            _BigId, ForeignKey("benchmark_specs.id", ondelete="CASCADE"), nullable=False, index=True
        )
    )
    status: RunStatus = Field(
        default=RunStatus.QUEUED, sa_column=Column(String(16), nullable=False, index=True)
    )
    reason: str | None = Field(default=None, max_length=32)
    error: str | None = Field(default=None, sa_column=Column(Text))
    trigger: str = Field(default="api", max_length=16)
    ref: str = Field(default="", max_length=256)
    # The admin who let it run a ref off the spec's allowed branches; None: checked.
    ref_approved_by: str | None = Field(default=None, max_length=256)
    # Runs queued together to repeat one ref (A/A) share this id; "" for a single run.
    aa_group: str = Field(default="", max_length=32)
    attempts: int = 0
    runner: str | None = Field(default=None, max_length=256)
    spec_hash: str = Field(default="", max_length=64)
    environment: dict[str, Any] = Field(
        default_factory=dict, sa_column=Column(JSON, nullable=False)
    )
    warnings: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    determinism_hash: str | None = Field(default=None, max_length=64)
    results: list[dict[str, Any]] = Field(
        default_factory=list, sa_column=Column(JSON, nullable=False)
    )
    metric_run_ids: list[int] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    trace_id: str | None = Field(default=None, max_length=32)
    created_at: datetime = _ts(nullable=False)
    started_at: datetime | None = _ts(nullable=True)
    finished_at: datetime | None = _ts(nullable=True)


class AaBatchPublic(SQLModel):
    """An A/A batch (`--repeat N`): usable runs against N, and whether it is done, still
    running, or stopped short because its budget of extra runs ran out."""

    aa_group: str
    target: int
    usable: int
    pending: int
    extra: int
    budget: int
    state: str
    message: str
    runs: list[dict[str, Any]]


class BenchmarkRunPublic(SQLModel):
    id: str
    spec_id: int
    spec_name: str
    project: str
    queue: str = ""
    status: RunStatus
    reason: str | None
    error: str | None
    trigger: str
    ref: str
    ref_approved_by: str | None = None
    aa_group: str = ""
    attempts: int
    runner: str | None
    spec_hash: str
    environment: dict[str, Any]
    warnings: list[str]
    # `environment["flags"]`, lifted out: throttled / contended / unlocked per GPU (issue #22).
    flags: list[dict[str, Any]] = []
    determinism_hash: str | None
    results: list[dict[str, Any]]
    metric_run_ids: list[int]
    trace_id: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    # In the answer to `POST /benchmarks/{name}/runs` only: every run that request queued.
    queued: list[str] = []

    @classmethod
    def of(cls, run: BenchmarkRun, spec: BenchmarkSpec) -> "BenchmarkRunPublic":
        """The run with its spec's name, project and queue, and its GPU-state flags."""
        flags = (run.environment or {}).get("flags") or []
        return cls(
            **run.model_dump(warnings=False),
            spec_name=spec.name,
            project=spec.project,
            queue=spec.queue,
            flags=flags,
        )


class BenchmarkRunsPublic(SQLModel):
    items: list[BenchmarkRunPublic]
    count: int


class RunRequestBody(SQLModel):
    """Body of `POST /benchmarks/{name}/runs`: an optional git ref to install and run at,
    and how many times to run it (more than once: A/A runs for the noise band).
    `allow_any_ref` (admins only) lets the ref be off the spec's allowed branches."""

    ref: str = Field(default="", max_length=256)
    repeat: int = Field(default=1, ge=1, le=MAX_REPEAT)
    allow_any_ref: bool = False

    @field_validator("ref")
    @classmethod
    def _ref(cls, value: str) -> str:
        return check_ref(value) if value else value


class Runner(SQLModel, table=True):
    __tablename__ = "runners"

    name: str = Field(primary_key=True, max_length=256)
    hostname: str = Field(default="", max_length=256)
    queues: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    capabilities: dict[str, Any] = Field(
        default_factory=dict, sa_column=Column(JSON, nullable=False)
    )
    online: bool = True
    started_at: datetime = _ts(nullable=False)
    last_seen_at: datetime = _ts(nullable=False)


class RunnerPublic(SQLModel):
    name: str
    hostname: str
    queues: list[str]
    capabilities: dict[str, Any]
    online: bool
    live: bool
    started_at: datetime
    last_seen_at: datetime


class RunnersPublic(SQLModel):
    items: list[RunnerPublic]
    count: int


BenchmarkSpecPublic.model_rebuild()
