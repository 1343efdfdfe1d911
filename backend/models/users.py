"""The `user` and `session` nouns: dashboard people, and their server-side login sessions.

A session row is keyed by the sha256 of the cookie's random id, so a leaked database
does not hand out live sessions; the CSRF token is kept as is because it is compared
with what the browser sends, and alone grants nothing.
"""

from datetime import datetime
from enum import StrEnum

from sqlalchemy import Column, DateTime, ForeignKey, Integer, String
from sqlmodel import Field, SQLModel

from backend.core.clock import utc_now


class Role(StrEnum):
    """What a signed-in person may do; each role includes the ones before it."""

    VIEWER = "viewer"
    UPLOADER = "uploader"
    ADMIN = "admin"

    @property
    def rank(self) -> int:
        return list(Role).index(self)


class User(SQLModel, table=True):
    __tablename__ = "users"

    id: int | None = Field(default=None, primary_key=True)
    username: str = Field(max_length=128, unique=True)
    # None for users known only from a reverse proxy's header: they cannot log in here.
    password_hash: str | None = Field(default=None, max_length=256)
    role: Role = Field(default=Role.VIEWER, sa_type=String(16))
    created_at: datetime = Field(
        default_factory=utc_now, sa_column=Column(DateTime(timezone=True), nullable=False)
    )
    disabled: bool = False


class LoginSession(SQLModel, table=True):
    __tablename__ = "sessions"

    id_hash: str = Field(primary_key=True, max_length=64)
    user_id: int = Field(
        sa_column=Column(
            Integer, ForeignKey("users.id", ondelete="CASCADE"), nullable=False, index=True
        )
    )
    csrf_token: str = Field(max_length=64)
    created_at: datetime = Field(
        default_factory=utc_now, sa_column=Column(DateTime(timezone=True), nullable=False)
    )
    expires_at: datetime = Field(
        sa_column=Column(DateTime(timezone=True), nullable=False, index=True)
    )
    last_seen_at: datetime = Field(
        default_factory=utc_now, sa_column=Column(DateTime(timezone=True), nullable=False)
    )


class UserPublic(SQLModel):
    """Who the API sees: `GET /api/v1/me`."""

    auth: str
    kind: str | None = None  # "user" or "token"; None when anonymous (AUTH=off)
    name: str | None = None
    role: Role | None = None
    scopes: list[str] = []
    csrf_token: str | None = None
