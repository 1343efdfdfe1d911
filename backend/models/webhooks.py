"""The `webhook` noun: where alerts go, and the log of every delivery attempt."""

from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import JSON, BigInteger, Column, DateTime, ForeignKey, Integer, String
from sqlmodel import Field, SQLModel

from backend.core.clock import utc_now

_BigId = BigInteger().with_variant(Integer(), "sqlite")


class WebhookKind(StrEnum):
    JSON = "json"
    SLACK = "slack"


class DeliveryStatus(StrEnum):
    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"


class WebhookBase(SQLModel):
    name: str = Field(max_length=128, min_length=1)
    url: str = Field(max_length=1024, min_length=8)
    kind: WebhookKind = Field(default=WebhookKind.JSON, sa_type=String(8))
    project: str | None = Field(default=None, max_length=128)
    active: bool = True


class WebhookCreate(WebhookBase):
    secret: str = Field(default="", max_length=256)


class Webhook(WebhookBase, table=True):
    __tablename__ = "webhooks"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=128, unique=True)
    secret: str = Field(default="", max_length=256)
    created_at: datetime = Field(
        default_factory=utc_now, sa_column=Column(DateTime(timezone=True), nullable=False)
    )


class WebhookPublic(WebhookBase):
    id: int
    created_at: datetime


class WebhookDelivery(SQLModel, table=True):
    __tablename__ = "webhook_deliveries"

    id: int | None = Field(default=None, sa_column=Column(_BigId, primary_key=True))
    webhook_id: int = Field(
        sa_column=Column(ForeignKey("webhooks.id", ondelete="CASCADE"), nullable=False, index=True)
    )
    event: str = Field(max_length=32)
    payload: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    status: DeliveryStatus = Field(default=DeliveryStatus.PENDING, sa_type=String(16))
    attempts: int = 0
    response_code: int | None = None
    error: str | None = None
    created_at: datetime = Field(
        default_factory=utc_now, sa_column=Column(DateTime(timezone=True), nullable=False)
    )
    delivered_at: datetime | None = Field(default=None, sa_column=Column(DateTime(timezone=True)))


class WebhookDeliveryPublic(SQLModel):
    id: int
    webhook_id: int
    event: str
    payload: dict[str, Any]
    status: DeliveryStatus
    attempts: int
    response_code: int | None
    error: str | None
    created_at: datetime
    delivered_at: datetime | None
