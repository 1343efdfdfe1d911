"""`/api/v1/webhooks`: alert endpoints (writes need `webhooks:write`) and their delivery log."""

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Response, status

from backend.api.access import require
from backend.api.deps import SessionDep
from backend.models.webhooks import WebhookCreate, WebhookDeliveryPublic, WebhookPublic
from backend.services import webhooks as service
from backend.services.permissions import CHANGE_WEBHOOKS

router = APIRouter(prefix="/webhooks", tags=["webhooks"])
WriteToken = Annotated[object, Depends(require(CHANGE_WEBHOOKS))]


@router.post("", status_code=status.HTTP_201_CREATED)
def create_webhook(session: SessionDep, _token: WriteToken, data: WebhookCreate) -> WebhookPublic:
    """Register a webhook; `secret` signs each body (X-Perfdash-Signature: sha256=...)."""
    return WebhookPublic.model_validate(service.create_webhook(session, data), from_attributes=True)


@router.get("")
def list_webhooks(session: SessionDep) -> list[WebhookPublic]:
    """All webhooks (secrets are never returned)."""
    return [
        WebhookPublic.model_validate(h, from_attributes=True)
        for h in service.list_webhooks(session)
    ]


@router.delete("/{webhook_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_webhook(webhook_id: int, session: SessionDep, _token: WriteToken) -> Response:
    """Delete a webhook and its delivery log."""
    service.delete_webhook(session, webhook_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/{webhook_id}/deliveries")
def list_deliveries(
    webhook_id: int, session: SessionDep, limit: Annotated[int, Query(ge=1, le=1000)] = 100
) -> list[WebhookDeliveryPublic]:
    """Deliveries, newest first: status, attempts, response code and error."""
    rows = service.list_deliveries(session, webhook_id, limit)
    return [WebhookDeliveryPublic.model_validate(r, from_attributes=True) for r in rows]
