"""Dashboard users: add, change role or password, disable, list, check a login.

Usernames are case-sensitive as typed (a reverse proxy's header is taken verbatim).
Changing a password or disabling a user ends all of that user's sessions; a role change
applies to the next request, since sessions look the role up.

Public surface: `add_user`, `set_role`, `set_password`, `disable_user`, `list_users`,
`get_user`, `check_login`, `proxy_user`.
"""

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from backend.models.users import Role, User
from backend.services.auth.passwords import burn_time, hash_password, needs_rehash, verify_password
from backend.services.auth.sessions import revoke_user_sessions
from backend.services.errors import InvalidInputError, NotFoundError

MAX_USERNAME = 128
MIN_PASSWORD = 8


def _check_username(username: str) -> str:
    if (
        not 0 < len(username) <= MAX_USERNAME
        or not username.isprintable()
        or username != (username.strip())
    ):
        raise InvalidInputError(
            f"a username is 1-{MAX_USERNAME} printable characters without surrounding spaces"
        )
    return username


def _check_password(password: str) -> str:
    if len(password) < MIN_PASSWORD:
        raise InvalidInputError(f"a password needs at least {MIN_PASSWORD} characters")
    return password


def get_user(db: Session, username: str) -> User:
    """The user called `username`.

    Raises:
        NotFoundError: no such user.
    """
    user = db.exec(select(User).where(User.username == username)).first()
    if user is None:
        raise NotFoundError(f"no user {username!r}")
    return user


def add_user(db: Session, username: str, password: str | None, role: Role) -> User:
    """Create and commit a user; `password=None` makes one that cannot log in here.

    Raises:
        InvalidInputError: a bad username or short password, or the name is taken.
    """
    user = User(
        username=_check_username(username),
        password_hash=None if password is None else hash_password(_check_password(password)),
        role=role,
    )
    db.add(user)
    try:
        db.commit()
    except IntegrityError as e:
        db.rollback()
        raise InvalidInputError(f"user {username!r} already exists") from e
    db.refresh(user)
    return user


def set_role(db: Session, username: str, role: Role) -> User:
    """Change a user's role; it applies to their next request."""
    user = get_user(db, username)
    user.role = role
    db.add(user)
    db.commit()
    return user


def set_password(db: Session, username: str, password: str) -> User:
    """Set a new password and end the user's sessions."""
    user = get_user(db, username)
    user.password_hash = hash_password(_check_password(password))
    assert user.id is not None
    revoke_user_sessions(db, user.id)
    db.add(user)
    db.commit()
    return user


def disable_user(db: Session, username: str) -> int:
    """Disable a user and end their sessions; returns how many sessions ended."""
    user = get_user(db, username)
    user.disabled = True
    assert user.id is not None
    ended = revoke_user_sessions(db, user.id)
    db.add(user)
    db.commit()
    return ended


def list_users(db: Session) -> list[User]:
    """Every user, by name."""
    return list(db.exec(select(User).order_by(col(User.username))).all())


def check_login(db: Session, username: str, password: str) -> User | None:
    """The enabled user whose password this is, else None.

    An unknown name costs one hash too, so timing does not tell which names exist. A hash
    made under other scrypt parameters is replaced on success.
    """
    user = db.exec(select(User).where(User.username == username)).first()
    if user is None or user.password_hash is None:
        burn_time(password)
        return None
    if not verify_password(password, user.password_hash) or user.disabled:
        return None
    if needs_rehash(user.password_hash):
        user.password_hash = hash_password(password)
        db.add(user)
        db.commit()
    return user


def proxy_user(db: Session, username: str, role: Role) -> User:
    """The user a reverse proxy named, created with `role` on first sight (no password)."""
    existing = db.exec(select(User).where(User.username == username)).first()
    if existing is not None:
        return existing
    try:
        return add_user(db, username, None, role)
    except InvalidInputError:
        # Another request created it first (unique name), or the name is unusable.
        return get_user(db, _check_username(username))
