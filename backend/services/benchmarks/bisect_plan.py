"""The bisect state machine as pure functions: what the finished runs say, and what to do next.

`decide` takes the bisect's state and what each commit's runs measured, and returns a
`Plan`: the new status, the refs to queue a run at (in order) and the result. No
database, no clock: the DB layer (`bisect.py`) reads the runs, calls it and applies it.

confirming: `repeats` runs at good and at bad, interleaved (A B A B ...) on one runner;
confirmed when bad is worse than good by more than `margin_pct` and the difference is
significant (Mann-Whitney U on the pooled samples, Welch's t-test when a side has fewer
than 8 values), else `not_confirmed`. bisecting: a commit is bad when its median is on
bad's side of the midpoint between good's and bad's medians; the midpoint of the last
good and first bad commits is probed next, until they are adjacent (`found`) or the next
probe would pass the run budget (`budget_exhausted`). A failed run fails the bisect.

Public surface: `Measured`, `Plan`, `State`, `decide`, `is_worse`.
"""

from dataclasses import dataclass, field

from backend.models.bisects import BisectStatus
from backend.services.series import mann_whitney_u, median, welch_t_test

ALPHA = 0.05
MIN_RANK_VALUES = 8


@dataclass(frozen=True)
class Measured:
    """What the runs at one ref gave: the pooled samples of the succeeded ones."""

    values: list[float] = field(default_factory=list)
    succeeded: int = 0
    failed: int = 0
    pending: int = 0
    errors: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class State:
    """A bisect as the state machine sees it."""

    status: BisectStatus
    good: str
    bad: str
    commits: list[str]  # good, ..., bad; empty while not listed yet
    repeats: int
    probe_repeats: int
    budget: int
    margin_pct: float
    lower_is_better: bool


@dataclass(frozen=True)
class Plan:
    """The next status, the runs to queue (refs, in order), and the result when done."""

    status: BisectStatus
    queue: list[str] = field(default_factory=list)
    verdicts: dict[str, str] = field(default_factory=dict)
    last_good: str | None = None
    first_bad: str | None = None
    error: str | None = None


def is_worse(good: float, bad: float, *, lower_is_better: bool, margin_pct: float) -> bool:
    """Whether `bad` is worse than `good` by more than `margin_pct` percent.

    >>> is_worse(10.0, 12.0, lower_is_better=True, margin_pct=5.0)
    True
    >>> is_worse(10.0, 12.0, lower_is_better=False, margin_pct=5.0)
    False
    """
    if good == 0:
        return bad > 0 if lower_is_better else bad < 0
    shift = 100.0 * (bad - good) / abs(good)
    return shift > margin_pct if lower_is_better else -shift > margin_pct


def _p_value(a: list[float], b: list[float]) -> float:
    if min(len(a), len(b)) >= MIN_RANK_VALUES:
        return mann_whitney_u(a, b)[1]
    return welch_t_test(a, b)[1]


def _runs_used(measured: dict[str, Measured]) -> int:
    return sum(m.succeeded + m.failed + m.pending for m in measured.values())


def _confirm(state: State, measured: dict[str, Measured]) -> Plan:
    good, bad = measured.get(state.good, Measured()), measured.get(state.bad, Measured())
    missing_good = state.repeats - good.succeeded - good.pending
    missing_bad = state.repeats - bad.succeeded - bad.pending
    if missing_good > 0 or missing_bad > 0:
        pairs = max(missing_good, missing_bad)
        queue = [r for _ in range(pairs) for r in (state.good, state.bad)]
        queue = _trim(queue, state.good, missing_good, state.bad, missing_bad)
        return Plan(BisectStatus.CONFIRMING, queue=queue)
    if len(good.values) < 2 or len(bad.values) < 2:
        return Plan(BisectStatus.FAILED, error="too few values at good or bad to compare")
    g, b = median(good.values), median(bad.values)
    worse = is_worse(g, b, lower_is_better=state.lower_is_better, margin_pct=state.margin_pct)
    p = _p_value(good.values, bad.values)
    if not (worse and p < ALPHA):
        error = f"bad ({b:.6g}) is not worse than good ({g:.6g}) by {state.margin_pct}% (p={p:.3g})"
        return Plan(BisectStatus.NOT_CONFIRMED, error=error)
    verdicts = {state.good: "good", state.bad: "bad"}
    if not state.commits:  # the commit list is still being made on the runner
        return Plan(BisectStatus.CONFIRMING, verdicts=verdicts)
    return _bisect(state, measured, verdicts)


def _trim(queue: list[str], good: str, n_good: int, bad: str, n_bad: int) -> list[str]:
    """Keep at most `n_good` goods and `n_bad` bads of an interleaved list."""
    left, out = {good: n_good, bad: n_bad}, []
    for ref in queue:
        if left[ref] > 0:
            left[ref] -= 1
            out.append(ref)
    return out


def _classify(state: State, measured: dict[str, Measured]) -> dict[str, str]:
    """good or bad for every measured commit, by the side of the good/bad midpoint."""
    g = median(measured[state.good].values)
    b = median(measured[state.bad].values)
    threshold = (g + b) / 2.0
    out = {}
    for ref, m in measured.items():
        if m.values and not m.pending:
            value = median(m.values)
            worse = value > threshold if state.lower_is_better else value < threshold
            out[ref] = "bad" if worse else "good"
    return out | {state.good: "good", state.bad: "bad"}


def _bisect(state: State, measured: dict[str, Measured], verdicts: dict[str, str]) -> Plan:
    verdicts = verdicts | _classify(state, measured)
    index = {ref: i for i, ref in enumerate(state.commits)}
    goods = [index[r] for r, v in verdicts.items() if v == "good" and r in index]
    lo = max(goods, default=0)
    bads = [index[r] for r, v in verdicts.items() if v == "bad" and r in index and index[r] > lo]
    hi = min(bads, default=len(state.commits) - 1)
    last_good, first_bad = state.commits[lo], state.commits[hi]
    if hi - lo <= 1:
        return Plan(BisectStatus.FOUND, [], verdicts, last_good, first_bad)
    if _runs_used(measured) + state.probe_repeats > state.budget:
        error = f"{hi - lo - 1} commits left between {last_good} and {first_bad}"
        return Plan(BisectStatus.BUDGET_EXHAUSTED, [], verdicts, last_good, first_bad, error)
    probe = state.commits[(lo + hi) // 2]
    return Plan(BisectStatus.BISECTING, [probe] * state.probe_repeats, verdicts)


def decide(state: State, measured: dict[str, Measured]) -> Plan:
    """The next step of a bisect, from its state and what its runs measured.

    Args:
        state: the bisect; `commits` empty while the commit list is not known yet.
        measured: per ref, the runs queued for it (pending, failed, succeeded + samples).

    Returns:
        A plan; `queue` empty and the status unchanged means: wait for runs (or the list).
    """
    if state.status not in (BisectStatus.CONFIRMING, BisectStatus.BISECTING):
        return Plan(state.status)
    failed = next((r for r, m in measured.items() if m.failed), None)
    if failed is not None:
        why = "; ".join(measured[failed].errors)[:500]
        return Plan(BisectStatus.FAILED, error=f"a run at {failed} failed: {why}")
    if any(m.pending for m in measured.values()):
        return Plan(state.status)
    if state.status == BisectStatus.CONFIRMING:
        return _confirm(state, measured)
    return _bisect(state, measured, {state.good: "good", state.bad: "bad"})
