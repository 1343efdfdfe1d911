"""Alerts: a webhook delivery per SLA status change, signed, logged, sent by a worker.

The push records each delivery and its outbox message (`backend.services.outbox.messages`) in its
own transaction, and sends the messages after the commit: an alert is never sent for a
push that was rolled back, and a broker outage delays it (the sweeper sends it) instead of
losing it. Deliveries run on the `webhooks` queue, never the ingest queue.

Each attempt is claimed (a conditional UPDATE of `attempts`), so a message sent twice
makes one attempt. The claim writes the next attempt's outbox message too, due after the
deadline and a backoff: if the worker dies mid-attempt, the sweeper still sends it. A
failed attempt moves that message to its backoff (1, 2, 4, 8, 16 s) and sends it; the
sixth attempt is the last. A refused target fails the delivery at once.

Public surface: `record_changes`, `record_event`, `deliver`, `sign`, `build_payload`,
`MAX_ATTEMPTS`, `SIGNATURE_HEADER`.
"""

import hashlib
import hmac
import http.client
import json
import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import delete, update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from backend.core.config import Settings
from backend.core.markdown_escape import slack_text
from backend.core.task_names import DELIVER_WEBHOOK, WEBHOOKS_QUEUE
from backend.models.outbox import OutboxMessage
from backend.models.slas import Rule, SlaVerdict, Verdict
from backend.models.webhooks import DeliveryStatus, Webhook, WebhookDelivery, WebhookKind
from backend.services import outbox
from backend.services.slas.webhook_http import post
from backend.services.slas.webhook_targets import TargetRefused, resolve_target

log = logging.getLogger(__name__)
SIGNATURE_HEADER = "X-Perfdash-Signature"
EVENT_HEADER = "X-Perfdash-Event"
MAX_ATTEMPTS = 6  # the first attempt and five retries


def _event(v: SlaVerdict) -> str | None:
    """The alert a verdict raises: only real status changes, never a repeat."""
    if v.verdict == Verdict.FAIL and v.previous != Verdict.FAIL:
        return "regression" if v.rule == Rule.REGRESSION else "sla_failed"
    if v.verdict == Verdict.PASS and v.previous == Verdict.FAIL:
        return "sla_recovered"
    return None


def build_payload(event: str, v: SlaVerdict, kind: WebhookKind) -> dict[str, Any]:
    """The JSON body for a webhook of `kind` (perfdash JSON, or Slack's `text` message)."""
    if kind == WebhookKind.SLACK:
        icon = ":large_green_circle:" if v.verdict == Verdict.PASS else ":red_circle:"
        obs = "n/a" if v.observed is None else f"{v.observed:.6g}"
        thr = "" if v.threshold is None else f" (threshold {v.threshold:.6g})"
        # names come from pushes and SLA rows: no line, link or mention of their own
        where = slack_text(f"{v.project}/{v.benchmark}/{v.metric}")
        bad = v.details.get("first_bad_commit")
        commit = f", first bad commit `{slack_text(str(bad))}`" if bad else ""
        name = slack_text(v.name)
        text = f"{icon} *{name}* {event.replace('_', ' ')}: {where} = {obs}{thr}{commit}"
        return {"text": text}
    return {"event": event, **v.model_dump(mode="json")}


def sign(secret: str, body: bytes) -> str:
    """``sha256=<hex HMAC>`` of the exact body bytes, as GitHub-style receivers expect.

    >>> sign("s", b"{}")[:15]
    'sha256=143ca8d5'
    """
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def _backoff_s(attempt: int) -> int:
    """Seconds between failed attempt `attempt` and the next.

    >>> [_backoff_s(n) for n in range(1, MAX_ATTEMPTS)]
    [1, 2, 4, 8, 16]
    """
    return int(2 ** (attempt - 1))


def _announce(
    session: Session, delivery_id: int, attempt: int, not_before: datetime | None = None
) -> OutboxMessage:
    return outbox.add_message(
        session,
        DELIVER_WEBHOOK,
        str(delivery_id),
        str(attempt),
        queue=WEBHOOKS_QUEUE,
        not_before=not_before,
    )


def record_changes(session: Session, verdicts: list[SlaVerdict]) -> list[OutboxMessage]:
    """Add a pending delivery per (status change, matching webhook), and its first attempt's
    outbox message; the caller commits, then sends them (`outbox.send_now`)."""
    changes = [(e, v) for v in verdicts if (e := _event(v)) is not None]
    if not changes:
        return []
    hooks = _active_hooks(session)
    rows = [
        WebhookDelivery(webhook_id=h.id, event=e, payload=build_payload(e, v, h.kind))
        for e, v in changes
        for h in hooks
        if h.id is not None and h.project in (None, v.project)
    ]
    return _queue(session, rows)


def _active_hooks(session: Session) -> list[Webhook]:
    return list(session.exec(select(Webhook).where(Webhook.active == True)))  # noqa: E712


def _queue(session: Session, rows: list[WebhookDelivery]) -> list[OutboxMessage]:
    session.add_all(rows)
    session.flush()
    return [_announce(session, r.id, 1) for r in rows if r.id is not None]


def record_event(
    session: Session, event: str, project: str, payload: dict[str, Any], text: str
) -> list[OutboxMessage]:
    """A delivery per matching webhook of an event that is not a verdict (a finished
    bisect): `{"event": event, **payload}`, or `text` for Slack. The caller commits, then
    sends the messages."""
    rows = [
        WebhookDelivery(
            webhook_id=h.id,
            event=event,
            payload={"text": text} if h.kind == WebhookKind.SLACK else {"event": event, **payload},
        )
        for h in _active_hooks(session)
        if h.id is not None and h.project in (None, project)
    ]
    return _queue(session, rows)


@dataclass
class _Attempt:
    number: int
    url: str
    secret: str
    event: str
    payload: dict[str, Any]
    retry_id: int | None  # the next attempt's outbox message


def _claim(session: Session, delivery_id: int, attempt: int, settings: Settings) -> _Attempt | None:
    """Take attempt `attempt` of a pending delivery, unless it was taken (a duplicate)."""
    delivery = session.get(WebhookDelivery, delivery_id)
    if delivery is None or delivery.status != DeliveryStatus.PENDING:
        return None
    number = attempt or delivery.attempts + 1  # a message from before attempts were named
    taken = session.connection().execute(
        update(WebhookDelivery)
        .where(
            col(WebhookDelivery.id) == delivery_id,
            col(WebhookDelivery.attempts) == number - 1,
            col(WebhookDelivery.status) == DeliveryStatus.PENDING,
        )
        .values(attempts=number)
    )
    if taken.rowcount != 1:
        session.rollback()
        return None
    hook = session.get(Webhook, delivery.webhook_id)
    assert hook is not None  # the foreign key cascades deletes
    retry_id = None
    if number < MAX_ATTEMPTS:
        due = settings.webhook_timeout_s + _backoff_s(number)
        retry_id = _announce(session, delivery_id, number + 1, _after(due)).id
    found = _Attempt(number, hook.url, hook.secret, delivery.event, delivery.payload, retry_id)
    session.commit()
    return found


def _after(seconds: float) -> datetime:
    return datetime.now(UTC) + timedelta(seconds=seconds)


def _send(attempt: _Attempt, delivery_id: int, settings: Settings) -> tuple[int | None, str | None]:
    """(response code, error); a refused target raises TargetRefused."""
    body = json.dumps(attempt.payload, separators=(",", ":"), sort_keys=True).encode()
    headers = {
        "Content-Type": "application/json",
        EVENT_HEADER: attempt.event,
        "X-Perfdash-Delivery": str(delivery_id),
    }
    if attempt.secret:
        headers[SIGNATURE_HEADER] = sign(attempt.secret, body)
    try:
        target = resolve_target(attempt.url, allow_private=settings.webhook_allow_private)
        code = post(target, body, headers, deadline_s=settings.webhook_timeout_s)
    except (OSError, http.client.HTTPException) as e:
        return None, f"{type(e).__name__}: {e}"
    return code, None if 200 <= code < 300 else f"HTTP {code}"


def deliver(
    engine: Engine, delivery_id: int, attempt: int, *, settings: Settings
) -> DeliveryStatus | None:
    """Make attempt `attempt` of a delivery and log it; schedule the next one if it failed.

    Args:
        engine: the database.
        delivery_id: the delivery to send; one no longer pending is left alone.
        attempt: which attempt this message is for (0: the next one); a message for an
            attempt already made is a duplicate and does nothing.
        settings: the deadline and the address policy.

    Returns:
        The delivery's status after the attempt, or None when nothing was attempted.
    """
    with Session(engine) as session:
        claimed = _claim(session, delivery_id, attempt, settings)
    if claimed is None:
        return None
    try:
        code, error = _send(claimed, delivery_id, settings)
        final = claimed.retry_id is None
    except TargetRefused as e:
        code, error, final = None, str(e), True
    with Session(engine) as session:
        delivery = session.get(WebhookDelivery, delivery_id)
        if delivery is None:
            return None
        delivery.response_code, delivery.error = code, error
        if error is None:
            delivery.status, delivery.delivered_at = DeliveryStatus.DELIVERED, datetime.now(UTC)
        elif final:
            delivery.status = DeliveryStatus.FAILED
        session.add(delivery)
        retry = _reschedule(session, claimed.retry_id, keep=error is not None and not final)
        status = delivery.status
        session.commit()
        if retry is not None:
            outbox.send_now(session, [retry])
    return status


def _reschedule(session: Session, retry_id: int | None, *, keep: bool) -> OutboxMessage | None:
    """Move the next attempt's message to its backoff (keep), or drop it (done)."""
    if retry_id is None:
        return None
    if not keep:
        session.execute(delete(OutboxMessage).where(col(OutboxMessage.id) == retry_id))
        return None
    message = session.get(OutboxMessage, retry_id)
    if message is None:  # already sent by a sweeper: it runs when it runs
        return None
    attempt = int(message.args[1])
    message.not_before = _after(_backoff_s(attempt - 1))
    session.add(message)
    return message
