"""Server-side login sessions: create at sign-in, look up per request, revoke.

The cookie carries 256 random bits; the table keeps only their sha256 (as for API
tokens, nothing to brute-force, so no salt or slow hash). Each session has its own
CSRF token, which the pages send back in `X-CSRFToken`. A session ends at `expires_at`
(SESSION_TTL_S after sign-in, not extended by use), at logout, or when its user is
disabled or changes password.

Public surface: `NewSession`, `create_session`, `find_session`, `revoke_session`,
`revoke_user_sessions`, `hash_session_id`.
"""

import hashlib
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlmodel import Session, col, delete, select

from backend.models.users import LoginSession, User

# Writing last_seen_at on every request would add a row update per page action.
_TOUCH_EVERY = timedelta(minutes=1)


@dataclass(frozen=True)
class NewSession:
    """What the browser is given: the session id and CSRF token (cookies), and for how long."""

    session_id: str
    csrf_token: str
    max_age_s: int


def hash_session_id(session_id: str) -> str:
    """The stored form of a session id."""
    return hashlib.sha256(session_id.encode()).hexdigest()


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def create_session(db: Session, user: User, ttl_s: int) -> NewSession:
    """Start a session for `user` (and drop every expired one) and commit."""
    assert user.id is not None
    now = datetime.now(UTC)
    # No in-session sync: SQLite hands back naive datetimes that Python cannot compare.
    expired = delete(LoginSession).where(col(LoginSession.expires_at) < now)
    db.exec(expired.execution_options(synchronize_session=False))
    session_id, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    db.add(
        LoginSession(
            id_hash=hash_session_id(session_id),
            user_id=user.id,
            csrf_token=csrf,
            created_at=now,
            expires_at=now + timedelta(seconds=ttl_s),
            last_seen_at=now,
        )
    )
    db.commit()
    return NewSession(session_id=session_id, csrf_token=csrf, max_age_s=ttl_s)


def find_session(db: Session, session_id: str) -> tuple[LoginSession, User] | None:
    """The live session for this cookie value and its enabled user, else None."""
    row = db.exec(
        select(LoginSession, User)
        .join(User, col(User.id) == col(LoginSession.user_id))
        .where(LoginSession.id_hash == hash_session_id(session_id))
    ).first()
    if row is None:
        return None
    login, user = row
    now = datetime.now(UTC)
    if _aware(login.expires_at) <= now or user.disabled:
        return None
    if now - _aware(login.last_seen_at) > _TOUCH_EVERY:
        login.last_seen_at = now
        db.add(login)
        db.commit()
    return login, user


def revoke_session(db: Session, session_id: str) -> None:
    """End one session (logout); unknown ids are ignored."""
    db.exec(delete(LoginSession).where(col(LoginSession.id_hash) == hash_session_id(session_id)))
    db.commit()


def revoke_user_sessions(db: Session, user_id: int) -> int:
    """End every session of a user; returns how many there were. The caller commits."""
    rows = db.exec(select(LoginSession).where(LoginSession.user_id == user_id)).all()
    for row in rows:
        db.delete(row)
    return len(rows)
