"""The bisect state machine as pure functions, against hand-computed sequences.

The expected probes, results and run counts below were worked out by hand for a
9-commit chain (index 0 good, 8 bad): midpoints (0+8)//2 = 4, then 2 or 6, and so on.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from backend.models.bisects import BisectStatus
from backend.services.benchmarks.bisect_plan import Measured, Plan, State, decide, is_worse

CHAIN = [f"c{i}" for i in range(9)]
GOOD_MS = [10.0, 10.1, 9.9, 10.05, 9.95, 10.02, 9.98, 10.03]
BAD_MS = [20.0, 20.2, 19.8, 20.1, 19.9, 20.05, 19.95, 20.02]


def _state(status: BisectStatus = BisectStatus.CONFIRMING, **changes: object) -> State:
    base = State(
        status=status, good="c0", bad="c8", commits=CHAIN, repeats=3, probe_repeats=1,
        budget=20, margin_pct=5.0, lower_is_better=True,
    )  # fmt: skip
    return replace(base, **changes)  # type: ignore[arg-type]


def _ok(values: list[float], runs: int = 1) -> Measured:
    return Measured(values=values, succeeded=runs)


def test_the_first_step_queues_good_and_bad_interleaved() -> None:
    plan = decide(_state(), {})
    assert plan.status == BisectStatus.CONFIRMING
    assert plan.queue == ["c0", "c8", "c0", "c8", "c0", "c8"]


def test_only_the_missing_confirmation_runs_are_queued() -> None:
    measured = {"c0": _ok(GOOD_MS, 3), "c8": _ok(BAD_MS, 2)}
    assert decide(_state(), measured).queue == ["c8"]


def test_pending_runs_mean_wait() -> None:
    measured = {"c0": _ok(GOOD_MS, 3), "c8": Measured(BAD_MS, succeeded=2, pending=1)}
    plan = decide(_state(), measured)
    assert plan.status == BisectStatus.CONFIRMING and plan.queue == []


def test_no_difference_is_not_confirmed() -> None:
    measured = {"c0": _ok(GOOD_MS, 3), "c8": _ok([v + 0.01 for v in GOOD_MS], 3)}
    plan = decide(_state(), measured)
    assert plan.status == BisectStatus.NOT_CONFIRMED and "not worse" in (plan.error or "")


def test_a_difference_below_the_margin_is_not_confirmed() -> None:
    slightly = [v * 1.03 for v in GOOD_MS]  # 3% slower, significant, margin 5%
    plan = decide(_state(), {"c0": _ok(GOOD_MS, 3), "c8": _ok(slightly, 3)})
    assert plan.status == BisectStatus.NOT_CONFIRMED


def test_confirmed_without_the_commit_list_waits_for_it() -> None:
    plan = decide(_state(commits=[]), {"c0": _ok(GOOD_MS, 3), "c8": _ok(BAD_MS, 3)})
    assert plan.status == BisectStatus.CONFIRMING and plan.queue == []
    assert plan.verdicts == {"c0": "good", "c8": "bad"}


def test_confirmed_probes_the_midpoint() -> None:
    plan = decide(_state(), {"c0": _ok(GOOD_MS, 3), "c8": _ok(BAD_MS, 3)})
    assert plan.status == BisectStatus.BISECTING and plan.queue == ["c4"]


def test_adjacent_good_and_bad_are_found_at_once() -> None:
    plan = decide(_state(commits=["c0", "c8"]), {"c0": _ok(GOOD_MS, 3), "c8": _ok(BAD_MS, 3)})
    assert (plan.status, plan.last_good, plan.first_bad) == (BisectStatus.FOUND, "c0", "c8")


def _simulate(state: State, first_bad: int, slower: bool = True) -> tuple[Plan, int, list[str]]:
    """Run the machine to its end: a commit at index >= first_bad measures BAD_MS (or
    GOOD_MS and BAD_MS swapped, for a throughput). Returns the last plan, the runs made
    and the probed commits in order."""
    measured: dict[str, Measured] = {}
    probes: list[str] = []
    for _ in range(50):
        plan = decide(state, measured)
        if plan.status not in (BisectStatus.CONFIRMING, BisectStatus.BISECTING):
            return plan, sum(m.succeeded for m in measured.values()), probes
        for ref in plan.queue:
            bad = CHAIN.index(ref) >= first_bad
            values = (BAD_MS if bad else GOOD_MS) if slower else (GOOD_MS if bad else BAD_MS)
            old = measured.get(ref, Measured())
            measured[ref] = Measured(old.values + values, old.succeeded + 1)
            if ref not in ("c0", "c8"):
                probes.append(ref)
        state = replace(state, status=plan.status)
    raise AssertionError("the bisect never ended")


@pytest.mark.parametrize(
    ("first_bad", "probes"),
    [(3, ["c4", "c2", "c3"]), (1, ["c4", "c2", "c1"]), (8, ["c4", "c6", "c7"]),
     (5, ["c4", "c6", "c5"])],
)  # fmt: skip
def test_bisect_finds_the_first_bad_commit(first_bad: int, probes: list[str]) -> None:
    plan, runs, seen = _simulate(_state(), first_bad)
    assert plan.status == BisectStatus.FOUND
    assert (plan.last_good, plan.first_bad) == (f"c{first_bad - 1}", f"c{first_bad}")
    assert seen == probes and runs == 6 + len(probes)


def test_higher_is_better_metrics_bisect_on_the_drop() -> None:
    plan, _, _ = _simulate(_state(lower_is_better=False), 3, slower=False)
    assert (plan.status, plan.first_bad) == (BisectStatus.FOUND, "c3")


def test_the_budget_stops_the_bisect_with_the_range_left() -> None:
    # 6 confirmation runs + probe c4 = 7 runs; the next probe would be the 8th.
    plan, runs, seen = _simulate(_state(budget=7), 3)
    assert runs == 7 and plan.status == BisectStatus.BUDGET_EXHAUSTED and seen == ["c4"]
    assert (plan.last_good, plan.first_bad) == ("c0", "c4")
    assert "3 commits left" in (plan.error or "")


def test_a_failed_run_fails_the_bisect_and_names_the_commit() -> None:
    measured = {
        "c0": _ok(GOOD_MS, 3),
        "c8": _ok(BAD_MS, 3),
        "c4": Measured(failed=1, errors=["run 1234 install: pip install failed"]),
    }
    plan = decide(_state(BisectStatus.BISECTING), measured)
    assert plan.status == BisectStatus.FAILED
    assert "c4" in (plan.error or "") and "pip install failed" in (plan.error or "")


def test_a_finished_bisect_stays_finished() -> None:
    plan = decide(_state(BisectStatus.FOUND), {"c0": _ok(GOOD_MS, 3)})
    assert plan.status == BisectStatus.FOUND and plan.queue == []


@pytest.mark.parametrize(
    ("good", "bad", "lower", "margin", "worse"),
    [(10, 11, True, 5, True), (10, 10.4, True, 5, False), (10, 9, False, 5, True),
     (10, 11, False, 5, False), (0, 1, True, 5, True), (10, 10.5, True, 5, False)],
)  # fmt: skip
def test_is_worse(good: float, bad: float, lower: bool, margin: float, worse: bool) -> None:
    assert is_worse(good, bad, lower_is_better=lower, margin_pct=margin) is worse
