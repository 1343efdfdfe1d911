"""The transactional outbox: a task message is a row first, written in the transaction of
the state change it announces, and a broker message second.

`add_message` adds the row to the caller's transaction; after the commit the caller calls
`send_now`, which sends it and deletes it. If the broker is down the row stays, and the
workers' sweeper (`sweep_outbox`, run by `workers/sweeper.py`) sends it once it is due. So a
benchmark run request answers 202 during a broker outage, and an SLA alert or a webhook
retry is never lost between the commit and the broker.

Every sender first takes a lease on the row (a conditional UPDATE of `next_attempt_at`), so
the API and several sweepers never send one row at once. Delivery is at least once: a
sender that dies between the send and the delete leaves the row to be sent again, so the
tasks behind it are idempotent (`claim_run`, `alerts.deliver`'s attempt claim).

Public surface: `add_message`, `send_now`, `sweep_outbox`, `OutboxSweep`.
"""

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import delete, update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from backend.core.config import Settings, get_settings
from backend.core.queue import try_enqueue
from backend.models.outbox import OutboxMessage

log = logging.getLogger(__name__)
_BATCH = 500


@dataclass
class OutboxSweep:
    """What one sweep did, by outbox row id."""

    sent: list[int] = field(default_factory=list)
    unsent: list[int] = field(default_factory=list)


def add_message(
    session: Session,
    task: str,
    *args: str,
    queue: str,
    not_before: datetime | None = None,
    **options: Any,
) -> OutboxMessage:
    """Add a task message to the session's transaction (the caller commits).

    Args:
        session: the session that writes the state change the message announces.
        task: the Celery task name (`backend.core.task_names`).
        args: the task's string arguments.
        queue: the queue to send it to.
        not_before: the task must not run before this (sent as a countdown).
        options: further `send_task` options (soft_time_limit, time_limit).

    Returns:
        The row, flushed, so it has its id.
    """
    # Until `next_attempt_at` the row is the writer's to send (`send_now`); after it, the
    # sweeper's. A retry due later is not the sweeper's before it is due.
    lease_until = max(datetime.now(UTC), not_before or datetime.now(UTC))
    message = OutboxMessage(
        task=task,
        args=list(args),
        queue=queue,
        options=options,
        not_before=not_before,
        next_attempt_at=lease_until + timedelta(seconds=get_settings().outbox_resend_after_s),
    )
    session.add(message)
    session.flush()
    return message


def _send(message: OutboxMessage, now: datetime) -> bool:
    options = dict(message.options)
    if message.not_before is not None:
        not_before = _aware(message.not_before)
        options["countdown"] = max(0.0, (not_before - now).total_seconds())
    return try_enqueue(message.task, *message.args, queue=message.queue, **options)


def _aware(at: datetime) -> datetime:
    # SQLite gives back naive datetimes; every stored time is UTC.
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def send_now(session: Session, messages: Sequence[OutboxMessage]) -> list[int]:
    """Send messages the session committed, and delete the ones the broker took.

    Call it after the commit that wrote them; a broker outage leaves them to the sweeper.

    Returns:
        The ids of the messages sent.
    """
    sent, now = [], datetime.now(UTC)
    for message in messages:
        if message.id is not None and _send(message, now):
            sent.append(message.id)
    if sent:
        session.execute(delete(OutboxMessage).where(col(OutboxMessage.id).in_(sent)))
        session.commit()
    return sent


def _forget(engine: Engine, message_id: int) -> None:
    with engine.begin() as conn:
        conn.execute(delete(OutboxMessage).where(col(OutboxMessage.id) == message_id))


def _lease(engine: Engine, message: OutboxMessage, until: datetime) -> bool:
    """Take the row for one send, unless another sender took it since it was read."""
    with engine.begin() as conn:
        done = conn.execute(
            update(OutboxMessage)
            .where(
                col(OutboxMessage.id) == message.id,
                col(OutboxMessage.next_attempt_at) == message.next_attempt_at,
            )
            .values(next_attempt_at=until, attempts=message.attempts + 1)
        )
    return done.rowcount == 1


def sweep_outbox(*, engine: Engine, settings: Settings, now: datetime | None = None) -> OutboxSweep:
    """Send every outbox message that is due: its writer did not send it (broker down, or
    the writer died between its commit and its send).

    Returns:
        The rows sent, and those whose send met a broker still down (tried again later,
        after a backoff that doubles per attempt up to ten times OUTBOX_RESEND_AFTER_S).
    """
    now = now or datetime.now(UTC)
    with Session(engine) as session:
        due = session.exec(
            select(OutboxMessage)
            .where(col(OutboxMessage.next_attempt_at) <= now)
            .order_by(col(OutboxMessage.id))
            .limit(_BATCH)
        ).all()
        session.expunge_all()
    result = OutboxSweep()
    for message in due:
        assert message.id is not None
        backoff = settings.outbox_resend_after_s * min(10, 2**message.attempts)
        if not _lease(engine, message, now + timedelta(seconds=backoff)):
            continue  # another sweeper, or the writer, has it
        if _send(message, now):
            _forget(engine, message.id)
            result.sent.append(message.id)
        else:
            result.unsent.append(message.id)
    if due:
        log.info("outbox sweeper: %d sent, %d not sent (broker down)", len(result.sent),
                 len(result.unsent))  # fmt: skip
    return result
