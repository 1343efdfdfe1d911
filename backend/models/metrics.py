"""The `metric point` noun and the run that carries it: numbers pushed by CI or a runner.

A run is one (project, benchmark, run key) and is stored once; a point is one metric of a
run and is stored once per run, which is what makes a retried CI push idempotent.
"""

from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    UniqueConstraint,
)
from sqlmodel import Field, SQLModel

from backend.core.clock import utc_now
from backend.models.slas import BaselineAcceptancePublic

# SQLite only auto-increments an INTEGER PRIMARY KEY; PostgreSQL gets a real bigint.
_BigId = BigInteger().with_variant(Integer(), "sqlite")


class Direction(StrEnum):
    """Which way is better; SLA rules and regression tests read it."""

    LOWER = "lower_is_better"
    HIGHER = "higher_is_better"


class MetricRun(SQLModel, table=True):
    __tablename__ = "metric_runs"
    __table_args__ = (Index("ix_metric_runs_series", "project", "benchmark", "timestamp"),)

    id: int | None = Field(default=None, sa_column=Column(_BigId, primary_key=True))
    idempotency_key: str = Field(max_length=64, unique=True)
    project: str = Field(max_length=128)
    benchmark: str = Field(max_length=256)
    commit: str = Field(default="", max_length=64)
    branch: str = Field(default="", max_length=256, index=True)
    run_id: str = Field(default="", max_length=256)
    url: str = Field(default="", max_length=1024)
    trace_id: str | None = Field(default=None, max_length=64)
    timestamp: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
    environment: dict[str, Any] = Field(
        default_factory=dict, sa_column=Column(JSON, nullable=False)
    )
    created_at: datetime = Field(
        default_factory=utc_now, sa_column=Column(DateTime(timezone=True), nullable=False)
    )


class MetricPoint(SQLModel, table=True):
    __tablename__ = "metric_points"
    __table_args__ = (
        UniqueConstraint("run_id", "metric", name="uq_metric_points_run_metric"),
        Index("ix_metric_points_metric", "metric"),
    )

    id: int | None = Field(default=None, sa_column=Column(_BigId, primary_key=True))
    run_id: int = Field(
        sa_column=Column(_BigId, ForeignKey("metric_runs.id", ondelete="CASCADE"), nullable=False)
    )
    metric: str = Field(max_length=128)
    unit: str = Field(default="", max_length=32)
    direction: Direction = Field(default=Direction.LOWER, sa_type=String(16))
    value: float | None = None
    hash: str | None = Field(default=None, max_length=128)
    samples: list[float] | None = Field(default=None, sa_column=Column(JSON))
    n: int = 0
    mean: float | None = None
    stddev: float | None = None
    min: float | None = None
    max: float | None = None
    p05: float | None = None
    p50: float | None = None
    p95: float | None = None
    p99: float | None = None


class MetricPointPublic(SQLModel):
    metric: str
    unit: str
    direction: Direction
    value: float | None
    hash: str | None
    n: int
    mean: float | None
    min: float | None
    max: float | None
    p05: float | None
    p50: float | None
    p95: float | None
    p99: float | None


class RunVerdictPublic(SQLModel):
    sla_id: str
    name: str
    severity: str
    verdict: str
    observed: float | None
    threshold: float | None


class MetricRunPublic(SQLModel):
    id: int
    project: str
    benchmark: str
    commit: str
    branch: str
    run_id: str
    url: str
    trace_id: str | None
    timestamp: datetime
    environment: dict[str, Any]
    # `environment.flags`: throttled or contended make the numbers suspect.
    flags: list[dict[str, Any]] = []
    points: list[MetricPointPublic] = []
    verdicts: list[RunVerdictPublic] = []


class MetricRunsPublic(SQLModel):
    items: list[MetricRunPublic]
    count: int
    skipped: int = Field(
        default=0, description="Stored runs left out: their timestamp is outside the window."
    )


class SeriesPoint(SQLModel):
    """One run's point of a series, with what the series page draws and links."""

    run: int
    commit: str
    branch: str
    timestamp: datetime
    trace_id: str | None
    value: float | None
    p05: float | None
    p50: float | None
    p95: float | None
    # The run's flags; `suspect` when one is throttled or contended (drawn hollow).
    flags: list[dict[str, Any]] = []
    suspect: bool = False


class NoiseBandPublic(SQLModel):
    """A series' run-to-run noise from A/A runs (repeated runs of one commit), and the
    minimum detectable change (MDC) between `n_judged` and `n_baseline` runs."""

    project: str
    benchmark: str
    metric: str
    estimator: str = "pooled stddev of ln(value) within commits"
    spread_pct: float | None = Field(
        default=None, description="Pooled within-commit stddev of ln(value), in percent (~CV)."
    )
    mdc_pct: float | None = Field(default=None, description="Minimum detectable change, %.")
    commits: int = Field(default=0, description="Commits (or A/A batches) with 2+ runs.")
    runs: int = Field(default=0, description="Runs of those commits (flagged runs left out).")
    n_judged: int
    n_baseline: int
    alpha: float
    power: float
    bimodality: float | None = Field(
        default=None, description="Sarle's bimodality coefficient of within-commit residuals."
    )
    bimodal: bool = False
    center: float | None = Field(
        default=None, description="Median of the newest n_baseline stable runs."
    )
    low: float | None = None
    high: float | None = None
    reason: str | None = Field(default=None, description="Why there is no band yet.")
    aa_runs: int = Field(default=0, description="A/A runs seen: flagged and unflagged.")
    runs_usable: int = Field(default=0, description="A/A runs not flagged: the band's runs.")
    runs_left_out: int = Field(default=0, description="A/A runs left out for a flag.")
    runs_needed: int = Field(default=0, description="Usable A/A runs a band needs.")
    left_out: list[dict[str, Any]] = Field(
        default_factory=list, description="Left-out runs (newest 20): id, run_id, commit, flags."
    )


class ChangePointPublic(SQLModel):
    index: int
    commit: str
    before: float
    after: float
    shift_pct: float
    p_value: float
    worse: bool = False  # a shift for the worse: `commit` is a first bad commit


class SeriesSla(SQLModel):
    """An SLA over the series, and the first bad commit its latest verdict names."""

    id: str
    name: str
    rule: str
    status: str | None
    first_bad_commit: str | None


class SeriesPublic(SQLModel):
    project: str
    benchmark: str
    metric: str
    unit: str
    direction: Direction
    points: list[SeriesPoint]
    change_points: list[ChangePointPublic]
    thresholds: list[float]
    slas: list[SeriesSla] = []
    acceptances: list[BaselineAcceptancePublic] = []
    noise: NoiseBandPublic | None = None
    skipped: int = Field(
        default=0,
        description="Stored runs of this series (any environment) left out: their timestamp "
        "is outside the window.",
    )
