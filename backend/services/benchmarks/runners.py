"""GPU runners: workers that consume benchmark queues register here and heartbeat.

Public surface: `register_runner`, `heartbeat`, `mark_offline`, `list_runners`,
`live_queues`, `warn_unserved`, `LIVE_WITHIN`.
"""

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlmodel import Session, col, select

from backend.core.clock import utc_now
from backend.models.benchmarks import BenchmarkRunPublic, Runner, RunnerPublic, RunStatus

HEARTBEAT_EVERY = timedelta(seconds=30)
# A runner is live when it was heard from within three heartbeats.
LIVE_WITHIN = 3 * HEARTBEAT_EVERY


def register_runner(
    session: Session, *, name: str, hostname: str, queues: list[str], capabilities: dict[str, Any]
) -> Runner:
    """Create or refresh a runner row at worker start-up."""
    runner = session.get(Runner, name) or Runner(name=name)
    runner.hostname, runner.queues, runner.capabilities = hostname, queues, capabilities
    runner.online, runner.started_at, runner.last_seen_at = True, utc_now(), utc_now()
    session.add(runner)
    session.commit()
    session.refresh(runner)
    return runner


def heartbeat(session: Session, name: str) -> None:
    """Record that the runner is alive."""
    runner = session.get(Runner, name)
    if runner is not None:
        runner.last_seen_at, runner.online = utc_now(), True
        session.add(runner)
        session.commit()


def mark_offline(session: Session, name: str) -> None:
    """A clean worker shutdown."""
    runner = session.get(Runner, name)
    if runner is not None:
        runner.online = False
        session.add(runner)
        session.commit()


def _aware(when: datetime) -> datetime:
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def list_runners(session: Session, *, live_only: bool = False) -> list[RunnerPublic]:
    """Runners, most recently seen first; `live` means online and heard from lately."""
    cutoff = utc_now() - LIVE_WITHIN
    out = []
    for r in session.exec(select(Runner).order_by(col(Runner.last_seen_at).desc())):
        live = r.online and _aware(r.last_seen_at) >= cutoff
        if live or not live_only:
            out.append(RunnerPublic(**r.model_dump(warnings=False), live=live))
    return out


def live_queues(session: Session) -> set[str]:
    """The queues some live runner consumes."""
    return {q for r in list_runners(session, live_only=True) for q in r.queues}


def no_runner_warning(queue: str) -> str:
    """What to tell someone whose run waits on a queue nobody consumes."""
    return f"no runner on queue {queue}; start `perfdash worker --queues {queue}` on a GPU host"


def warn_unserved(session: Session, runs: list[BenchmarkRunPublic]) -> list[BenchmarkRunPublic]:
    """Add a warning to each queued run whose queue no live runner consumes (it would
    otherwise wait in silence); other runs are returned as they are.

    Args:
        session: the database session.
        runs: runs as the API answers them.

    Returns:
        The same runs, the unserved queued ones with one more line in `warnings`.
    """
    waiting = [r for r in runs if r.status == RunStatus.QUEUED]
    live = live_queues(session) if waiting else set()
    for run in waiting:
        if run.queue not in live:
            run.warnings = [*run.warnings, no_runner_warning(run.queue)]
    return runs
