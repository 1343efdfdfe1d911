"""Regression verdicts that ask for a bisect: which spec, which good and bad, and why not.

A pushed commit is a stranger's text until the runner has found it on one of the spec's
allowed branches, so a verdict only asks: the bisect waits for the runner's check
(`backend.services.benchmarks.bisect`), and the verdict records the answer.

Public surface: `start_from_verdicts`.
"""

import logging
from typing import Any

from sqlmodel import Session, select

from backend.core.git_refs import check_ref
from backend.models.benchmarks import BenchmarkSpec
from backend.models.bisects import BisectCreate
from backend.models.slas import Rule, Sla, SlaVerdict, Verdict
from backend.services.benchmarks.bisect import git_url, pushed_commits, start_bisect
from backend.services.benchmarks.bisect_verdict import note_verdict
from backend.services.errors import InvalidInputError

log = logging.getLogger(__name__)


def _spec_of(session: Session, benchmark: str) -> tuple[BenchmarkSpec, str] | None:
    """The spec a series belongs to (`name` or `name[label]`) and the sweep label."""
    name, label = benchmark, ""
    if benchmark.endswith("]") and "[" in benchmark:
        name, _, rest = benchmark.partition("[")
        label = rest[:-1]
    spec = session.exec(select(BenchmarkSpec).where(BenchmarkSpec.name == name)).first()
    return (spec, label) if spec is not None else None


def _commit_before(session: Session, spec: BenchmarkSpec, benchmark: str, commit: str) -> str:
    ordered = pushed_commits(session, spec, benchmark)
    at = ordered.index(commit) if commit in ordered else 0
    return ordered[at - 1] if at > 0 else ""


def _start_one(session: Session, v: SlaVerdict, spec: BenchmarkSpec, label: str, bad: str) -> str:
    """Start the verdict's bisect and return its id, or raise saying why none starts."""
    try:
        check_ref(bad)
    except ValueError as e:
        raise InvalidInputError(f"the pushed commit {bad!r} is not a git ref: {e}") from e
    if git_url(spec.install) is None:
        raise InvalidInputError(f"spec {spec.name!r} has no install hook `git+URL@{{ref}}`")
    good = _commit_before(session, spec, v.benchmark, bad)
    if not good:
        raise InvalidInputError(f"no commit before {bad} in the {spec.branch} series")
    sla = session.get(Sla, v.sla_id)
    assert sla is not None
    # The tolerance the verdict used: the SLA's own, or the noise band's MDC.
    used = v.details.get("tolerance_pct", sla.tolerance_pct)
    margin = float(used) if used is not None else 0.0
    data = BisectCreate(good=good, bad=bad, metric=v.metric, label=label, margin_pct=margin)
    return start_bisect(session, spec.name, data, trigger="sla", sla_id=sla.id).id


def start_from_verdicts(session: Session, verdicts: list[SlaVerdict]) -> list[str]:
    """Ask for a bisect for each new `regression` verdict on a spec that can run at a
    commit: good is the commit before the first bad one the rule named, in the spec
    branch's series. Called after a push (the metrics route, a finished run that was not
    itself a bisect's). Never raises for a bisect that cannot start (no live runner, one
    open, a pushed commit that is no ref): the verdict's `details["bisect"]` says why, in
    the answer and in its stored evaluation. A bisect asked for is `checking` until the
    runner has found its commits on an allowed branch (`started`) or not (`not_started`).

    Returns:
        The ids of the bisects asked for.
    """
    started = []
    for v in verdicts:
        new = v.rule == Rule.REGRESSION and v.verdict == Verdict.FAIL and v.previous != v.verdict
        found = _spec_of(session, v.benchmark) if new else None
        bad = str(v.details.get("first_bad_commit") or "")
        if found is None or not bad or session.get(Sla, v.sla_id) is None:
            continue
        try:
            bisect_id = _start_one(session, v, *found, bad)
            note: dict[str, Any] = {"status": "checking", "id": bisect_id}
            started.append(bisect_id)
        except (InvalidInputError, ValueError) as e:
            session.rollback()
            log.info("no bisect for %s %s: %s", v.benchmark, v.metric, e)
            note = {"status": "not_started", "reason": str(e)}
        note_verdict(session, v.sla_id, bad, note)
        session.commit()
        v.details = {**v.details, "bisect": note}
    return started
