"""The `bisect` noun: confirming a regression between two commits on one runner, then
finding the commit that caused it (issue 22).

The row holds the whole state (the commits, which runs measured which commit, the
verdict of each probe); `backend.services.benchmarks.bisect` advances it when a run ends.
"""

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import field_validator
from sqlalchemy import JSON, BigInteger, Column, DateTime, ForeignKey, Integer, String, Text
from sqlmodel import Field, SQLModel

from backend.core.clock import utc_now
from backend.core.git_refs import check_ref

_BigId = BigInteger().with_variant(Integer(), "sqlite")


class BisectStatus(StrEnum):
    CONFIRMING = "confirming"
    BISECTING = "bisecting"
    FOUND = "found"
    NOT_CONFIRMED = "not_confirmed"
    BUDGET_EXHAUSTED = "budget_exhausted"
    FAILED = "failed"


OPEN_STATUSES = (BisectStatus.CONFIRMING, BisectStatus.BISECTING)
# A bisect's runs push their metrics under this prefix + the spec's branch, and a
# regression on such a branch never starts another bisect.
BISECT_BRANCH_PREFIX = "bisect/"


def _ts() -> Any:
    return Field(default_factory=utc_now, sa_column=Column(DateTime(timezone=True), nullable=False))


class BisectCreate(SQLModel):
    """Body of `POST /benchmarks/{name}/bisects`."""

    good: str = Field(max_length=256)
    bad: str = Field(max_length=256)
    metric: str = Field(max_length=128, min_length=1)
    # The sweep point (`m=4096`), for specs with a sweep; "" for none.
    label: str = Field(default="", max_length=256)
    margin_pct: float = Field(default=5.0, ge=0, le=1000)
    repeats: int = Field(default=3, ge=2, le=10)
    probe_repeats: int = Field(default=1, ge=1, le=10)
    budget: int = Field(default=20, ge=4, le=200)
    # Run good, bad and the commits between even off the spec's allowed branches (admins).
    allow_any_ref: bool = False

    @field_validator("good", "bad")
    @classmethod
    def _ref(cls, value: str) -> str:
        return check_ref(value)


class Bisect(SQLModel, table=True):
    __tablename__ = "bisects"

    id: str = Field(primary_key=True, max_length=32)
    spec_id: int = Field(
        sa_column=Column(
            _BigId, ForeignKey("benchmark_specs.id", ondelete="CASCADE"), nullable=False, index=True
        )
    )
    label: str = Field(default="", max_length=256)
    metric: str = Field(max_length=128)
    lower_is_better: bool | None = None
    margin_pct: float = 5.0
    good: str = Field(max_length=256)
    bad: str = Field(max_length=256)
    status: BisectStatus = Field(
        default=BisectStatus.CONFIRMING, sa_column=Column(String(24), nullable=False, index=True)
    )
    error: str | None = Field(default=None, sa_column=Column(Text))
    # good, the commits between (oldest first, first parent), bad; empty until listed.
    commits: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    commits_source: str = Field(default="", max_length=16)
    # ref -> ids of the benchmark runs that measured it, in queue order.
    runs: dict[str, list[str]] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    # ref -> {"verdict": good|bad, "median": float, "n": samples}, as judged.
    verdicts: dict[str, dict[str, Any]] = Field(
        default_factory=dict, sa_column=Column(JSON, nullable=False)
    )
    repeats: int = 3
    probe_repeats: int = 1
    budget: int = 20
    runner: str = Field(default="", max_length=256)
    last_good: str | None = Field(default=None, max_length=256)
    first_bad: str | None = Field(default=None, max_length=256)
    trigger: str = Field(default="api", max_length=16)
    sla_id: str | None = Field(default=None, max_length=32)
    # The admin who let it run refs off the spec's allowed branches; None: checked.
    ref_approved_by: str | None = Field(default=None, max_length=256)
    # Optimistic lock: two run completions racing to advance the bisect, one wins.
    version: int = 0
    created_at: datetime = _ts()
    updated_at: datetime = _ts()


class BisectStep(SQLModel):
    """One measured commit, for the panel's table."""

    ref: str
    position: int
    role: str
    runs: list[str]
    verdict: str | None
    median: float | None
    n: int


class BisectPublic(SQLModel):
    id: str
    spec_name: str
    benchmark: str
    label: str
    metric: str
    lower_is_better: bool | None
    margin_pct: float
    good: str
    bad: str
    status: BisectStatus
    error: str | None
    commits: list[str]
    commits_source: str
    steps: list[BisectStep]
    runs_used: int
    budget: int
    repeats: int
    probe_repeats: int
    runner: str
    last_good: str | None
    first_bad: str | None
    trigger: str
    sla_id: str | None
    ref_approved_by: str | None = None
    trace_diff: str | None
    created_at: datetime
    updated_at: datetime


class BisectsPublic(SQLModel):
    items: list[BisectPublic]
    count: int
