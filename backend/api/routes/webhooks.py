"""`/api/v1/webhooks`: alert endpoints (writes need `webhooks:write`) and their delivery log.

Webhook URLs are secrets (a Slack URL carries its token) and the delivery log says which
internal ports answered: both are shown in full only to callers who may change webhooks
(`READ_WEBHOOK_TARGETS`); others see the URL redacted after the host, and no log.
"""

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Response, status

from backend.api.access import IdentityDep, require
from backend.api.deps import SessionDep, SettingsDep
from backend.models.webhooks import WebhookCreate, WebhookDeliveryPublic, WebhookPublic
from backend.services import slas as service
from backend.services.auth import CHANGE_WEBHOOKS, READ_WEBHOOK_TARGETS, permits
from backend.services.slas import redact_url

router = APIRouter(prefix="/webhooks", tags=["webhooks"])
WriteToken = Annotated[object, Depends(require(CHANGE_WEBHOOKS))]
LogReader = Annotated[object, Depends(require(READ_WEBHOOK_TARGETS))]


@router.post("", status_code=status.HTTP_201_CREATED)
def create_webhook(
    session: SessionDep, settings: SettingsDep, _token: WriteToken, data: WebhookCreate
) -> WebhookPublic:
    """Register a webhook; `secret` signs each body (X-Perfdash-Signature: sha256=...)."""
    hook = service.create_webhook(session, data, allow_private=settings.webhook_allow_private)
    return WebhookPublic.model_validate(hook, from_attributes=True)


@router.get("")
def list_webhooks(
    session: SessionDep, settings: SettingsDep, identity: IdentityDep
) -> list[WebhookPublic]:
    """All webhooks; secrets are never returned, and URLs only to webhook admins."""
    full = permits(identity, READ_WEBHOOK_TARGETS, settings.auth)
    hooks = [
        WebhookPublic.model_validate(h, from_attributes=True)
        for h in service.list_webhooks(session)
    ]
    for hook in hooks if not full else []:
        hook.url = redact_url(hook.url)
    return hooks


@router.delete("/{webhook_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_webhook(webhook_id: int, session: SessionDep, _token: WriteToken) -> Response:
    """Delete a webhook and its delivery log."""
    service.delete_webhook(session, webhook_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/{webhook_id}/deliveries")
def list_deliveries(
    webhook_id: int,
    session: SessionDep,
    _reader: LogReader,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> list[WebhookDeliveryPublic]:
    """Deliveries, newest first: status, attempts, response code and error (webhook admins)."""
    rows = service.list_deliveries(session, webhook_id, limit)
    return [WebhookDeliveryPublic.model_validate(r, from_attributes=True) for r in rows]
