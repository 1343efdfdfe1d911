"""API tokens: creation, and the `require_scope` dependency that guards write routes.

Only a sha256 of the token is stored. Tokens carry 256 bits of randomness, so a plain
sha256 (no salt, no slow hash) is enough: there is nothing to brute-force, and lookups
stay one indexed equality. All bearer-token auth lives here so issue 10 can extend it in
one place. Every scoped request also spends from the token's rate-limit bucket.

Public surface: `create_token`, `require_scope`, `authenticate`, `hash_token`, `SCOPES`.
"""

import hashlib
import math
import secrets
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Annotated

from fastapi import Depends, HTTPException, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlmodel import Session, select

from backend.api.deps import SessionDep
from backend.models.api_tokens import ApiToken
from backend.services.rate_limit import token_buckets

SCOPES = ("metrics:write", "slas:write", "webhooks:write", "admin")
TOKEN_PREFIX = "pd_"
# Writing last_used_at on every push would add a row update per request; a minute is enough.
_TOUCH_EVERY = timedelta(minutes=1)
_bearer = HTTPBearer(auto_error=False, description="A perfdash API token (pd_...).")


def hash_token(plaintext: str) -> str:
    """The stored form of a token."""
    return hashlib.sha256(plaintext.encode()).hexdigest()


def create_token(session: Session, name: str, scopes: list[str]) -> tuple[str, ApiToken]:
    """Create and commit a token; the plaintext is returned once and never stored.

    Raises:
        ValueError: an unknown scope.
    """
    unknown = sorted(set(scopes) - set(SCOPES))
    if unknown or not scopes:
        raise ValueError(f"unknown or missing scopes {unknown}; known: {', '.join(SCOPES)}")
    plaintext = TOKEN_PREFIX + secrets.token_urlsafe(32)
    row = ApiToken(
        name=name, prefix=plaintext[:10], token_hash=hash_token(plaintext), scopes=sorted(scopes)
    )
    session.add(row)
    session.commit()
    session.refresh(row)
    return plaintext, row


def authenticate(session: Session, plaintext: str, scope: str) -> ApiToken | None:
    """The live token with `scope` (or `admin`) for this plaintext, else None."""
    token = session.exec(
        select(ApiToken).where(ApiToken.token_hash == hash_token(plaintext))
    ).first()
    if token is None or token.revoked_at is not None:
        return None
    if scope not in token.scopes and "admin" not in token.scopes:
        return None
    now = datetime.now(UTC)
    last = token.last_used_at
    if last is None or now - (last if last.tzinfo else last.replace(tzinfo=UTC)) > _TOUCH_EVERY:
        token.last_used_at = now
        session.add(token)
        session.commit()
    return token


def require_scope(scope: str) -> Callable[..., ApiToken]:
    """A FastAPI dependency that admits a bearer token holding `scope` (401/403 otherwise)."""

    def dependency(
        session: SessionDep,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    ) -> ApiToken:
        if credentials is None:
            raise HTTPException(
                status.HTTP_401_UNAUTHORIZED,
                "an API token is required: Authorization: Bearer <token>",
                headers={"WWW-Authenticate": "Bearer"},
            )
        token = authenticate(session, credentials.credentials, scope)
        if token is None:
            raise HTTPException(
                status.HTTP_403_FORBIDDEN, f"the token is unknown, revoked or lacks {scope!r}"
            )
        _check_rate(token)
        return token

    return dependency


def _check_rate(token: ApiToken) -> None:
    """429 when the token has spent its burst and refill (TOKEN_RATE_PER_S)."""
    wait_s = token_buckets().take(token.token_hash)
    if wait_s > 0:
        raise HTTPException(
            status.HTTP_429_TOO_MANY_REQUESTS,
            f"token {token.prefix}... is over its rate limit; retry in {wait_s:.1f} s",
            headers={"Retry-After": str(max(1, math.ceil(wait_s)))},
        )
