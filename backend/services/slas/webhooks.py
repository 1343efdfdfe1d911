"""Webhook endpoints and their delivery log (the sending is in `alerts`).

A URL is checked when it is registered (`webhook_targets.check_url`: no loopback, private
or link-local target unless WEBHOOK_ALLOW_PRIVATE) and again at every send.

Public surface: `create_webhook`, `list_webhooks`, `delete_webhook`, `list_deliveries`.
"""

from sqlmodel import Session, col, select

from backend.models.webhooks import Webhook, WebhookCreate, WebhookDelivery
from backend.services.errors import InvalidInputError, NotFoundError
from backend.services.slas.webhook_targets import check_url


def create_webhook(session: Session, data: WebhookCreate, *, allow_private: bool) -> Webhook:
    """Register a webhook.

    Args:
        session: the database session.
        data: the webhook.
        allow_private: WEBHOOK_ALLOW_PRIVATE (loopback and private targets allowed).

    Raises:
        InvalidInputError: the name is taken, or the URL is not http(s), does not resolve,
            or resolves to a refused address (`TargetRefused`).
    """
    check_url(data.url, allow_private=allow_private)
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
