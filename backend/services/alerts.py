"""Alerts: a webhook delivery per SLA status change, signed, logged, sent by a worker.

The push records deliveries in its own transaction and enqueues them after the commit, so
an alert is never sent for a push that was rolled back, and a broker outage leaves the
delivery `pending` in the log instead of failing the push.

Public surface: `record_changes`, `enqueue_deliveries`, `deliver`, `sign`, `build_payload`,
`DeliveryFailed`, `SIGNATURE_HEADER`.
"""

import hashlib
import hmac
import json
import logging
from datetime import UTC, datetime
from typing import Any

import httpx
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from backend.core.queue import enqueue
from backend.core.task_names import ALERTS_QUEUE, DELIVER_WEBHOOK
from backend.models.slas import Rule, SlaVerdict, Verdict
from backend.models.webhooks import DeliveryStatus, Webhook, WebhookDelivery, WebhookKind
from backend.services.markdown_escape import slack_text

log = logging.getLogger(__name__)
SIGNATURE_HEADER = "X-Perfdash-Signature"
EVENT_HEADER = "X-Perfdash-Event"
DELIVERY_TIMEOUT_S = 10.0


class DeliveryFailed(Exception):
    """The receiver did not take the delivery (network error or non-2xx); worth a retry."""


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


def record_changes(session: Session, verdicts: list[SlaVerdict]) -> list[int]:
    """Add a pending delivery per (status change, matching webhook); returns their ids."""
    changes = [(e, v) for v in verdicts if (e := _event(v)) is not None]
    if not changes:
        return []
    hooks = session.exec(select(Webhook).where(Webhook.active == True)).all()  # noqa: E712
    rows = [
        WebhookDelivery(webhook_id=h.id, event=e, payload=build_payload(e, v, h.kind))
        for e, v in changes
        for h in hooks
        if h.id is not None and h.project in (None, v.project)
    ]
    session.add_all(rows)
    session.flush()
    return [r.id for r in rows if r.id is not None]


def enqueue_deliveries(ids: list[int]) -> None:
    """Queue each delivery; a broker outage is logged and the deliveries stay pending."""
    for delivery_id in ids:
        try:
            enqueue(DELIVER_WEBHOOK, str(delivery_id), queue=ALERTS_QUEUE)
        except Exception:
            log.exception("cannot queue webhook delivery %s; it stays pending", delivery_id)


def _post(hook: Webhook, delivery: WebhookDelivery) -> int:
    body = json.dumps(delivery.payload, separators=(",", ":"), sort_keys=True).encode()
    headers = {
        "Content-Type": "application/json",
        EVENT_HEADER: delivery.event,
        "X-Perfdash-Delivery": str(delivery.id),
    }
    if hook.secret:
        headers[SIGNATURE_HEADER] = sign(hook.secret, body)
    response = httpx.post(hook.url, content=body, headers=headers, timeout=DELIVERY_TIMEOUT_S)
    return response.status_code


def deliver(engine: Engine, delivery_id: int, *, final: bool) -> DeliveryStatus | None:
    """Send one delivery and log the attempt.

    Args:
        engine: the database.
        delivery_id: the delivery to send; one already delivered is left alone.
        final: the last attempt; a failure then marks the delivery `failed`.

    Returns:
        The new status, or None when the delivery no longer exists.

    Raises:
        DeliveryFailed: the attempt failed and another one should follow.
    """
    with Session(engine) as session:
        delivery = session.get(WebhookDelivery, delivery_id)
        if delivery is None or delivery.status == DeliveryStatus.DELIVERED:
            return delivery.status if delivery else None
        hook = session.get(Webhook, delivery.webhook_id)
        assert hook is not None  # the foreign key cascades deletes
        delivery.attempts += 1
        try:
            code: int | None = _post(hook, delivery)
            error = None if code is not None and 200 <= code < 300 else f"HTTP {code}"
        except httpx.HTTPError as e:
            code, error = None, f"{type(e).__name__}: {e}"
        delivery.response_code, delivery.error = code, error
        if error is None:
            delivery.status, delivery.delivered_at = DeliveryStatus.DELIVERED, datetime.now(UTC)
        elif final:
            delivery.status = DeliveryStatus.FAILED
        session.add(delivery)
        session.commit()
        if error is not None and not final:
            raise DeliveryFailed(f"delivery {delivery_id} to {hook.url}: {error}")
        return delivery.status
