"""`perfdash user ...` and `perfdash token ...`: accounts and API tokens, from the shell.

Both write to the configured database directly (this is how the first admin and the
first token come to exist). A password is read from the environment variable named by
`--password-env`, or prompted for twice; never from a flag, so it stays out of shell
history and process lists. A token is printed once and stored only as a hash.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlmodel import Session

EXIT_ERROR = 2
ROLES = ("viewer", "uploader", "admin")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `user` and `token` commands to the `perfdash` parser."""
    user = sub.add_parser("user", help="dashboard users (AUTH=password or proxy)")
    actions = user.add_subparsers(required=True, metavar="ACTION")
    add = actions.add_parser("add", help="create a user")
    add.add_argument("name")
    add.add_argument("--role", choices=ROLES, default="viewer")
    _password_arg(add)
    add.set_defaults(handler=_user_add)
    role = actions.add_parser("set-role", help="change a user's role")
    role.add_argument("name")
    role.add_argument("role", choices=ROLES)
    role.set_defaults(handler=_user_set_role)
    passwd = actions.add_parser("passwd", help="set a new password (ends the user's sessions)")
    passwd.add_argument("name")
    _password_arg(passwd)
    passwd.set_defaults(handler=_user_passwd)
    disable = actions.add_parser("disable", help="disable a user and end their sessions")
    disable.add_argument("name")
    disable.set_defaults(handler=_user_disable)
    actions.add_parser("list", help="every user").set_defaults(handler=_user_list)

    token = sub.add_parser("token", help="API tokens").add_subparsers(
        required=True, metavar="ACTION"
    )
    create = token.add_parser("create", help="create a token and print it once")
    create.add_argument("--scope", action="append", required=True, help="e.g. metrics:write")
    create.add_argument("--name", default="ci")
    create.set_defaults(handler=_token_create)
    token.add_parser("list", help="every token (never the secret)").set_defaults(
        handler=_token_list
    )
    revoke = token.add_parser("revoke", help="revoke a token by id or prefix")
    revoke.add_argument("key", help="the id or the pd_... prefix `token list` shows")
    revoke.set_defaults(handler=_token_revoke)


def _password_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--password-env",
        metavar="VAR",
        default=None,
        help="read the password from this environment variable (default: prompt)",
    )


@contextmanager
def _database() -> Iterator[Session]:
    from sqlmodel import Session

    from backend.core.db import get_engine
    from workers.cli.db import prepare_database

    prepare_database()
    with Session(get_engine()) as session:
        yield session


def _password(args: argparse.Namespace) -> str:
    if args.password_env:
        value = os.environ.get(args.password_env)
        if not value:
            raise ValueError(f"${args.password_env} is not set")
        return value
    first = getpass.getpass("password: ")
    if first != getpass.getpass("again: "):
        raise ValueError("the passwords differ")
    return first


def _run(action: Callable[[Session], str]) -> int:
    """Run `action` on the database; print its line, or the error and exit 2."""
    from backend.services.errors import ServiceError

    try:
        with _database() as session:
            print(action(session))
    except (ServiceError, ValueError) as e:
        print(f"perfdash: {e}", file=sys.stderr)
        return EXIT_ERROR
    return 0


def _user_add(args: argparse.Namespace) -> int:
    from backend.models.users import Role
    from backend.services.auth import add_user

    try:
        password = _password(args)
    except ValueError as e:
        print(f"perfdash: {e}", file=sys.stderr)
        return EXIT_ERROR

    def action(session: Session) -> str:
        user = add_user(session, args.name, password, Role(args.role))
        return f"user {user.username!r} added as {user.role}"

    return _run(action)


def _user_set_role(args: argparse.Namespace) -> int:
    from backend.models.users import Role
    from backend.services.auth import set_role

    return _run(
        lambda s: f"user {set_role(s, args.name, Role(args.role)).username!r} is now {args.role}"
    )


def _user_passwd(args: argparse.Namespace) -> int:
    from backend.services.auth import set_password

    try:
        password = _password(args)
    except ValueError as e:
        print(f"perfdash: {e}", file=sys.stderr)
        return EXIT_ERROR
    return _run(lambda s: f"password of {set_password(s, args.name, password).username!r} changed")


def _user_disable(args: argparse.Namespace) -> int:
    from backend.services.auth import disable_user

    return _run(
        lambda s: f"user {args.name!r} disabled, {disable_user(s, args.name)} sessions ended"
    )


def _table(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
    )


def _when(moment: object) -> str:
    return "-" if moment is None else str(moment)[:19]


def _user_list(_args: argparse.Namespace) -> int:
    from backend.services.auth import list_users

    def action(session: Session) -> str:
        rows = [("USER", "ROLE", "STATE", "LOGIN", "CREATED")]
        for u in list_users(session):
            state = "disabled" if u.disabled else "active"
            login = "password" if u.password_hash else "proxy"
            rows.append((u.username, str(u.role), state, login, _when(u.created_at)))
        return _table(rows)

    return _run(action)


def _token_create(args: argparse.Namespace) -> int:
    from backend.services.auth import create_token

    try:
        with _database() as session:
            plaintext, row = create_token(session, args.name, args.scope)
    except ValueError as e:
        print(f"perfdash: {e}", file=sys.stderr)
        return EXIT_ERROR
    print(plaintext)
    print(
        f"token {row.prefix}... ({row.name}) scopes {', '.join(row.scopes)}; "
        "it is shown once and stored only as a hash",
        file=sys.stderr,
    )
    return 0


def _token_list(_args: argparse.Namespace) -> int:
    from backend.services.auth import list_tokens

    def action(session: Session) -> str:
        rows = [("ID", "PREFIX", "NAME", "SCOPES", "CREATED", "LAST USED", "REVOKED")]
        for t in list_tokens(session):
            rows.append(
                (str(t.id), f"{t.prefix}...", t.name, ",".join(t.scopes), _when(t.created_at),
                 _when(t.last_used_at), _when(t.revoked_at))
            )  # fmt: skip
        return _table(rows)

    return _run(action)


def _token_revoke(args: argparse.Namespace) -> int:
    from backend.services.auth import revoke_token

    return _run(lambda s: f"token {revoke_token(s, args.key).prefix}... is revoked")
