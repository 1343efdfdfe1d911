"""The `SLA` noun and its `SLA evaluation` history: a rule over a series, and its verdicts.

The SLA row also caches its latest status, so the board reads one row per SLA instead of
scanning the evaluation history.
"""

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Any, Self

from pydantic import model_validator
from sqlalchemy import JSON, BigInteger, Column, DateTime, ForeignKey, Index, Integer, String
from sqlmodel import Field, SQLModel

from backend.core.clock import utc_now

_BigId = BigInteger().with_variant(Integer(), "sqlite")


class Statistic(StrEnum):
    P50 = "p50"
    P95 = "p95"
    P99 = "p99"
    MEAN = "mean"
    MIN = "min"
    MAX = "max"
    LAST = "last"


class Rule(StrEnum):
    ABSOLUTE = "absolute"
    RELATIVE = "relative"
    NO_INCREASE = "no_increase"
    DETERMINISM = "determinism"
    REGRESSION = "regression"


class Severity(StrEnum):
    INFO = "info"
    WARNING = "warning"
    CRITICAL = "critical"


class Verdict(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    NO_DATA = "no_data"
    # Not judged: the run carries a suspect flag (throttled, contended) and the SLA has
    # `require_stable`; the SLA's status stays what it was.
    SKIPPED = "skipped"
    # Not judged: a regression or relative rule with no `tolerance_pct` and no noise band
    # yet has no tolerance to judge by (never 0 %); the details say what is missing.
    INSUFFICIENT_DATA = "insufficient_data"


class SlaBase(SQLModel):
    name: str = Field(max_length=128, min_length=1)
    project: str = Field(max_length=128)
    benchmark: str = Field(max_length=256)
    metric: str = Field(max_length=128)
    environment: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    branch: str | None = Field(default=None, max_length=256)
    statistic: Statistic = Field(default=Statistic.P50, sa_type=String(8))
    window: int = Field(default=1, ge=1, le=1000)
    rule: Rule = Field(default=Rule.ABSOLUTE, sa_type=String(16))
    op: str = Field(default="<=", max_length=2)
    threshold: float | None = None
    # None: regression and relative rules use the noise band's minimum detectable change
    # (learned from A/A runs), and answer `insufficient_data` until the band exists.
    tolerance_pct: float | None = Field(default=None, ge=0, le=1000)
    # Leave runs flagged throttled or contended out of statistics, and skip their verdicts.
    require_stable: bool = False
    baseline_branch: str = Field(default="main", max_length=256)
    baseline_runs: int = Field(default=10, ge=1, le=1000)
    severity: Severity = Field(default=Severity.WARNING, sa_type=String(16))
    description: str = Field(default="", max_length=1024)


class SlaCreate(SlaBase):
    """An SLA as written in YAML or sent to the API; the rule's required fields are checked."""

    @model_validator(mode="after")
    def _rule_fields(self) -> Self:
        if self.rule == Rule.ABSOLUTE:
            if self.threshold is None:
                raise ValueError("an absolute rule needs a threshold")
            if self.op not in ("<=", "<", ">=", ">"):
                raise ValueError("op must be one of <=, <, >=, >")
        return self


class Sla(SlaBase, table=True):
    __tablename__ = "slas"

    id: str = Field(default_factory=lambda: uuid.uuid4().hex, primary_key=True, max_length=32)
    name: str = Field(max_length=128, unique=True)
    project: str = Field(max_length=128, index=True)
    status: Verdict | None = Field(default=None, sa_type=String(32))
    status_changed_at: datetime | None = Field(
        default=None, sa_column=Column(DateTime(timezone=True))
    )
    last_observed: float | None = None
    last_threshold: float | None = None
    last_evaluated_at: datetime | None = Field(
        default=None, sa_column=Column(DateTime(timezone=True))
    )
    # Why the latest run was not judged (its flags, or the data an SLA lacks), or None.
    last_skip_reason: str | None = Field(default=None, max_length=512)
    # The last SPARKLINE_LENGTH observed values, kept here so the board reads one row per SLA.
    sparkline: list[float] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    created_at: datetime = Field(
        default_factory=utc_now, sa_column=Column(DateTime(timezone=True), nullable=False)
    )
    updated_at: datetime = Field(
        default_factory=utc_now, sa_column=Column(DateTime(timezone=True), nullable=False)
    )


SPARKLINE_LENGTH = 30


class SlaPublic(SlaBase):
    id: str
    sparkline: list[float] = []
    status: Verdict | None
    status_changed_at: datetime | None
    last_observed: float | None
    last_threshold: float | None
    last_evaluated_at: datetime | None
    last_skip_reason: str | None = None


class SlasPublic(SQLModel):
    items: list[SlaPublic]
    count: int


class SlaEvaluation(SQLModel, table=True):
    __tablename__ = "sla_evaluations"
    __table_args__ = (Index("ix_sla_evaluations_sla_created", "sla_id", "created_at"),)

    id: int | None = Field(default=None, sa_column=Column(_BigId, primary_key=True))
    sla_id: str = Field(sa_column=Column(ForeignKey("slas.id", ondelete="CASCADE"), nullable=False))
    run_id: int | None = Field(
        default=None,
        sa_column=Column(_BigId, ForeignKey("metric_runs.id", ondelete="CASCADE"), index=True),
    )
    commit: str = Field(default="", max_length=64)
    verdict: Verdict = Field(sa_type=String(32))
    observed: float | None = None
    threshold: float | None = None
    baseline: float | None = None
    details: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    created_at: datetime = Field(
        default_factory=utc_now, sa_column=Column(DateTime(timezone=True), nullable=False)
    )


class SlaEvaluationPublic(SQLModel):
    sla_id: str
    run_id: int | None
    commit: str
    verdict: Verdict
    observed: float | None
    threshold: float | None
    baseline: float | None
    details: dict[str, Any]
    created_at: datetime


class SlaVerdict(SQLModel):
    """One SLA's verdict on one push, as the push response and the CLI table show it."""

    sla_id: str
    name: str
    severity: Severity
    project: str
    benchmark: str
    metric: str
    rule: Rule
    verdict: Verdict
    observed: float | None
    threshold: float | None
    baseline: float | None
    previous: Verdict | None
    details: dict[str, Any] = {}
    # The run's flags (`environment.flags`): suspect ones explain a `skipped` verdict.
    flags: list[dict[str, Any]] = []


class BaselineAcceptanceCreate(SQLModel):
    """A request to accept a level as an SLA's new baseline; `commit` defaults to the first
    bad commit of the SLA's open regression."""

    reason: str = Field(min_length=1, max_length=1024)
    commit: str | None = Field(default=None, min_length=1, max_length=64)


class BaselineAcceptance(SQLModel, table=True):
    """Who accepted which run's level as an SLA's new baseline, when and why.

    The SLA's baselines and change points read history from this run on, so an accepted
    regression stops failing and becomes the normal it was judged against.
    """

    __tablename__ = "baseline_acceptances"

    id: int | None = Field(default=None, sa_column=Column(_BigId, primary_key=True))
    sla_id: str = Field(
        sa_column=Column(ForeignKey("slas.id", ondelete="CASCADE"), nullable=False, index=True)
    )
    run_id: int = Field(
        sa_column=Column(_BigId, ForeignKey("metric_runs.id", ondelete="CASCADE"), nullable=False)
    )
    commit: str = Field(max_length=64)
    accepted_by: str = Field(max_length=256)
    reason: str = Field(max_length=1024)
    accepted_at: datetime = Field(
        default_factory=utc_now, sa_column=Column(DateTime(timezone=True), nullable=False)
    )


class BaselineAcceptancePublic(SQLModel):
    id: int
    sla_id: str
    sla_name: str
    run_id: int
    commit: str
    accepted_by: str
    reason: str
    accepted_at: datetime
