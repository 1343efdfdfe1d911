"""GPU runners: workers that consume benchmark queues register here and heartbeat.

Public surface: `register_runner`, `heartbeat`, `mark_offline`, `list_runners`,
`LIVE_WITHIN`.
"""

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlmodel import Session, col, select

from backend.core.clock import utc_now
from backend.models.benchmarks import Runner, RunnerPublic

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
