"""The baselines of SLAs: which runs they are made of, and accepting a new level.

A baseline reads the SLA's series from its latest accepted baseline on and leaves out the
runs of confirmed regressions (`series.regimes`), so a regression does not become the new
normal by itself: only someone with the right to change SLAs can make it so, with a
reason, and the acceptance stays in the series for everyone to see.

Public surface: `REGRESSION_ALPHA`, `REGRESSION_HISTORY`, `BASELINE_RULES`,
`JudgedSeries`, `sla_value`, `lower_is_better`, `split_series`, `good_runs`, `judged_series`,
`baseline_rows`, `accept_baseline`, `list_acceptances`. `split_series` and `good_runs` are
pure (rows in, rows out); the rest read the database.
"""

from dataclasses import dataclass

from sqlmodel import Session, col, select

from backend.models.metrics import Direction, MetricPoint, MetricRun
from backend.models.slas import (
    BaselineAcceptance,
    BaselineAcceptanceCreate,
    BaselineAcceptancePublic,
    Rule,
    Sla,
)
from backend.services.errors import InvalidInputError
from backend.services.series import (
    REGRESSION_ALPHA,
    Regime,
    SeriesRow,
    env_matches,
    find_regimes,
    open_regression,
    point_stat,
    read_history,
    representative,
)
from backend.services.slas.definitions import get_sla
from backend.services.slas.tolerance import Tolerance, read_tolerance

# Change points are searched in this many newest runs (E-divisive is O(n^2) per split).
REGRESSION_HISTORY = 60
BASELINE_RULES = (Rule.RELATIVE, Rule.NO_INCREASE, Rule.REGRESSION)


@dataclass(frozen=True, slots=True)
class JudgedSeries:
    """An SLA's series oldest first (runs with a value only), and its regimes."""

    rows: list[SeriesRow]
    values: list[float]
    regimes: list[Regime]


def sla_value(sla: Sla, point: MetricPoint) -> float | None:
    """The number of a run that the SLA's baseline and change points are about."""
    return (
        representative(point) if sla.rule == Rule.REGRESSION else point_stat(point, sla.statistic)
    )


def lower_is_better(sla: Sla, point: MetricPoint) -> bool:
    """`no_increase` ignores the metric's direction; every other rule follows it."""
    return sla.rule == Rule.NO_INCREASE or point.direction == Direction.LOWER


def _accepted_since(session: Session, sla: Sla) -> MetricRun | None:
    """The first run of the SLA's latest accepted baseline."""
    query = (
        select(MetricRun)
        .join(BaselineAcceptance, col(BaselineAcceptance.run_id) == col(MetricRun.id))
        .where(BaselineAcceptance.sla_id == sla.id)
        .order_by(col(BaselineAcceptance.accepted_at).desc(), col(BaselineAcceptance.id).desc())
    )
    return session.exec(query.limit(1)).first()


def split_series(
    sla: Sla, rows: list[SeriesRow], *, lower: bool | None = None, tolerance_pct: float = 0.0
) -> JudgedSeries:
    """An SLA's series (`rows` newest first, as read) oldest first, split into regimes.

    Args:
        sla: the SLA whose rule applies.
        rows: the series, newest first; rows without the SLA's value are dropped.
        lower: lower is better; None to read it from the newest point.
        tolerance_pct: how much worse a regime may be (`slas.tolerance`).

    Regimes are found in the newest `REGRESSION_HISTORY` values; older ones count as good.
    """
    ordered = [r for r in reversed(rows) if sla_value(sla, r.point) is not None]
    values = [v for r in ordered if (v := sla_value(sla, r.point)) is not None]
    if not ordered:
        return JudgedSeries([], [], [])
    if lower is None:
        lower = lower_is_better(sla, ordered[-1].point)
    older = max(0, len(values) - REGRESSION_HISTORY)
    found = find_regimes(
        values[older:],
        lower_is_better=lower,
        tolerance_pct=tolerance_pct,
        alpha=REGRESSION_ALPHA,
    )
    shifted = [
        Regime(r.start + older, r.end + older, r.level, r.regressed, r.change) for r in found
    ]
    head = [Regime(0, older, sum(values[:older]) / older, False, None)] if older else []
    return JudgedSeries(ordered, values, head + shifted)


def good_runs(judged: JudgedSeries, count: int) -> tuple[list[SeriesRow], SeriesRow | None]:
    """The newest `count` runs of good regimes (oldest first), and the first run of the
    confirmed regression left out (None when none was)."""
    good = [r for g in judged.regimes if not g.regressed for r in judged.rows[g.start : g.end]]
    left_out = next((judged.rows[g.start] for g in judged.regimes if g.regressed), None)
    return good[-count:], left_out


def judged_series(
    session: Session,
    sla: Sla,
    *,
    branch: str,
    lower: bool | None = None,
    exclude_run: int | None = None,
    limit: int = REGRESSION_HISTORY,
    tolerance: Tolerance | None = None,
) -> JudgedSeries:
    """The SLA's series on `branch` since its accepted baseline, split into regimes.

    Args:
        session: an open session.
        sla: the SLA whose selector, rule and tolerance apply.
        branch: the branch whose runs make the series.
        lower: lower is better; None to read it from the newest point.
        exclude_run: a run to leave out (the one being judged against its baseline).
        limit: the newest runs to read; regimes are found in the newest
            `REGRESSION_HISTORY` of them, older runs count as good.
        tolerance: the SLA's tolerance, when the caller has it (else it is read).

    With `require_stable`, runs flagged throttled or contended are not in the series.
    """
    rows = read_history(
        session,
        project=sla.project,
        benchmark=sla.benchmark,
        metric=sla.metric,
        branch=branch,
        environment=sla.environment,
        exclude_run=exclude_run,
        since=_accepted_since(session, sla),
        stable_only=sla.require_stable,
        limit=limit,
    )
    tolerance = tolerance or read_tolerance(session, sla)
    return split_series(sla, rows, lower=lower, tolerance_pct=tolerance.pct)


def baseline_rows(
    session: Session, sla: Sla, run: MetricRun, *, lower: bool, tolerance: Tolerance | None = None
) -> tuple[list[SeriesRow], SeriesRow | None]:
    """The newest `baseline_runs` good runs of the baseline branch, and the first run of
    the confirmed regression left out (None when none was).

    The run being judged, runs before the accepted baseline and runs of confirmed
    regressions are left out.
    """
    judged = judged_series(
        session,
        sla,
        branch=sla.baseline_branch,
        lower=lower,
        exclude_run=run.id,
        limit=max(sla.baseline_runs, REGRESSION_HISTORY),
        tolerance=tolerance,
    )
    return good_runs(judged, sla.baseline_runs)


def _run_of_commit(session: Session, sla: Sla, commit: str) -> MetricRun:
    """The oldest run of a commit (or a unique prefix of one) in the SLA's baseline series."""
    query = (
        select(MetricRun)
        .join(MetricPoint, col(MetricPoint.run_id) == col(MetricRun.id))
        .where(
            MetricRun.project == sla.project,
            MetricRun.benchmark == sla.benchmark,
            MetricRun.branch == sla.baseline_branch,
            MetricPoint.metric == sla.metric,
            col(MetricRun.commit).startswith(commit, autoescape=True),
        )
        .order_by(col(MetricRun.timestamp), col(MetricRun.id))
    )
    runs = [r for r in session.exec(query).all() if env_matches(sla.environment, r.environment)]
    where = f"{sla.project}/{sla.benchmark}/{sla.metric} on branch {sla.baseline_branch!r}"
    if not runs:
        raise InvalidInputError(f"commit {commit!r}: no run of it in {where}")
    if len({r.commit for r in runs}) > 1:
        raise InvalidInputError(f"commit {commit!r} is ambiguous in {where}; give more of it")
    return runs[0]


def _open_regression_run(session: Session, sla: Sla) -> MetricRun:
    """The first run of the confirmed regression the SLA's baseline branch is in."""
    judged = judged_series(session, sla, branch=sla.baseline_branch)
    start = open_regression(judged.regimes)
    if start is None:
        raise InvalidInputError(
            f"SLA {sla.name!r} has no confirmed regression on branch {sla.baseline_branch!r} "
            "to accept; name the commit whose level becomes the baseline"
        )
    return judged.rows[start.start].run


def _public(row: BaselineAcceptance, sla_name: str) -> BaselineAcceptancePublic:
    return BaselineAcceptancePublic.model_validate({**row.model_dump(), "sla_name": sla_name})


def accept_baseline(
    session: Session, sla_id: str, data: BaselineAcceptanceCreate, *, accepted_by: str
) -> BaselineAcceptancePublic:
    """Make a run's level the SLA's baseline from now on, and record who, when and why.

    Args:
        session: an open session; committed here.
        sla_id: the SLA.
        data: the reason, and the commit whose level to accept (default: the first bad
            commit of the SLA's open regression on its baseline branch).
        accepted_by: who asked (a user or a token, as `Identity.label` names them).

    Raises:
        NotFoundError: no such SLA.
        InvalidInputError: the rule has no baseline, the commit is not in the series, or
            no commit was named and there is no regression to accept.
    """
    sla = get_sla(session, sla_id)
    if sla.rule not in BASELINE_RULES:
        raise InvalidInputError(
            f"SLA {sla.name!r} is an {sla.rule} rule, which has no baseline to accept; "
            f"only {', '.join(BASELINE_RULES)} rules do"
        )
    run = (
        _run_of_commit(session, sla, data.commit)
        if data.commit
        else _open_regression_run(session, sla)
    )
    assert run.id is not None
    row = BaselineAcceptance(
        sla_id=sla.id, run_id=run.id, commit=run.commit, accepted_by=accepted_by, reason=data.reason
    )
    session.add(row)
    session.commit()
    session.refresh(row)
    return _public(row, sla.name)


def list_acceptances(
    session: Session,
    *,
    sla_id: str | None = None,
    project: str | None = None,
    benchmark: str | None = None,
    metric: str | None = None,
) -> list[BaselineAcceptancePublic]:
    """Accepted baselines, oldest first, of one SLA or of the SLAs over one series."""
    query = select(BaselineAcceptance, Sla).join(Sla, col(Sla.id) == col(BaselineAcceptance.sla_id))
    for column, value in (
        (Sla.id, sla_id),
        (Sla.project, project),
        (Sla.benchmark, benchmark),
        (Sla.metric, metric),
    ):
        if value is not None:
            query = query.where(column == value)
    query = query.order_by(col(BaselineAcceptance.accepted_at), col(BaselineAcceptance.id))
    return [_public(a, s.name) for a, s in session.exec(query).all()]
