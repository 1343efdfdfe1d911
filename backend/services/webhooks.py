"""Webhook endpoints and their delivery log (the sending is in `alerts`).

Public surface: `create_webhook`, `list_webhooks`, `delete_webhook`, `list_deliveries`.
"""

from sqlmodel import Session, col, select

from backend.models.webhooks import Webhook, WebhookCreate, WebhookDelivery
from backend.services.errors import InvalidInputError, NotFoundError


def create_webhook(session: Session, data: WebhookCreate) -> Webhook:
    """Register a webhook.

    Raises:
        InvalidInputError: the name is taken or the URL is not http(s).
    """
    if not data.url.startswith(("http://", "https://")):
        raise InvalidInputError(f"webhook url must be http:// or https://, got {data.url!r}")
    if session.exec(select(Webhook).where(Webhook.name == data.name)).first():
        raise InvalidInputError(f"a webhook named {data.name!r} exists")
    hook = Webhook.model_validate(data)
    session.add(hook)
    session.commit()
    session.refresh(hook)
    return hook


def list_webhooks(session: Session) -> list[Webhook]:
    """All webhooks by name."""
    return list(session.exec(select(Webhook).order_by(col(Webhook.name))).all())


def delete_webhook(session: Session, webhook_id: int) -> None:
    """Delete a webhook and its delivery log.

    Raises:
        NotFoundError: no such webhook.
    """
    hook = session.get(Webhook, webhook_id)
    if hook is None:
        raise NotFoundError(f"no webhook with id {webhook_id}")
    session.delete(hook)
    session.commit()


def list_deliveries(session: Session, webhook_id: int, limit: int) -> list[WebhookDelivery]:
    """A webhook's deliveries, newest first."""
    query = (
        select(WebhookDelivery)
        .where(WebhookDelivery.webhook_id == webhook_id)
        .order_by(col(WebhookDelivery.id).desc())
        .limit(limit)
    )
    return list(session.exec(query).all())
