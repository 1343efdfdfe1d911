"""API tokens: create, find, list, revoke, and the per-token rate limit.

Only a sha256 of the token is stored. Tokens carry 256 bits of randomness, so a plain
sha256 (no salt, no slow hash) is enough: there is nothing to brute-force, and lookups
stay one indexed equality. Every token may read; its scopes say what else it may do
(`backend.services.auth.permissions`), and `admin` implies all of them. Every request made
with a token spends from the token's rate-limit bucket.

Public surface: `create_token`, `find_token`, `list_tokens`, `revoke_token`,
`check_rate`, `hash_token`, `SCOPES`.
"""

import hashlib
import secrets
from datetime import UTC, datetime, timedelta

from sqlmodel import Session, col, or_, select

from backend.models.api_tokens import ApiToken
from backend.services.auth.rate_limit import token_buckets
from backend.services.errors import NotFoundError, TooManyRequestsError

SCOPES = (
    "traces:write",
    "bench:run",
    "benchmarks:write",
    "metrics:write",
    "slas:write",
    "webhooks:write",
    "admin",
)
TOKEN_PREFIX = "pd_"
# Writing last_used_at on every push would add a row update per request; a minute is enough.
_TOUCH_EVERY = timedelta(minutes=1)


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


def find_token(session: Session, plaintext: str) -> ApiToken | None:
    """The live (not revoked) token for this plaintext, its last use noted; else None."""
    token = session.exec(
        select(ApiToken).where(ApiToken.token_hash == hash_token(plaintext))
    ).first()
    if token is None or token.revoked_at is not None:
        return None
    now = datetime.now(UTC)
    last = token.last_used_at
    if last is None or now - (last if last.tzinfo else last.replace(tzinfo=UTC)) > _TOUCH_EVERY:
        token.last_used_at = now
        session.add(token)
        session.commit()
    return token


def list_tokens(session: Session) -> list[ApiToken]:
    """Every token, revoked ones included, oldest first."""
    return list(session.exec(select(ApiToken).order_by(col(ApiToken.id))).all())


def revoke_token(session: Session, key: str) -> ApiToken:
    """Revoke the token whose id or shown prefix (`pd_...`) is `key`; revoking twice is a no-op.

    Raises:
        NotFoundError: no token, or more than one, matches.
    """
    match = or_(col(ApiToken.prefix) == key.removesuffix("..."))
    if key.isdigit():
        match = or_(match, col(ApiToken.id) == int(key))
    rows = session.exec(select(ApiToken).where(match)).all()
    if len(rows) != 1:
        raise NotFoundError(f"{len(rows)} tokens match {key!r}; give the id from `token list`")
    token = rows[0]
    if token.revoked_at is None:
        token.revoked_at = datetime.now(UTC)
        session.add(token)
        session.commit()
    return token


def check_rate(token: ApiToken) -> None:
    """Spend one request of the token's bucket (TOKEN_RATE_PER_S, TOKEN_RATE_BURST).

    Raises:
        TooManyRequestsError: the bucket is empty.
    """
    wait_s = token_buckets().take(token.token_hash)
    if wait_s > 0:
        raise TooManyRequestsError(
            f"token {token.prefix}... is over its rate limit; retry in {wait_s:.1f} s", wait_s
        )
