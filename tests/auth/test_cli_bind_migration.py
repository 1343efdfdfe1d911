"""`perfdash user` and `perfdash token` on the test database, the bind rule with auth on,
and migration 0009 (models match it; it downgrades and upgrades again)."""

from __future__ import annotations

import getpass
from collections.abc import Callable

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect
from sqlalchemy.engine import Engine
from sqlmodel import Session, SQLModel, select

from backend.core.bind import UnsafeBindError, check_bind
from backend.core.config import Settings
from backend.core.migrate import alembic_config
from backend.models.api_tokens import ApiToken
from backend.models.users import User
from backend.services.auth.users import check_login
from tests.auth.conftest import MakeClient, sign_in
from workers.cli.main import main

NEW_PASSWORD = "another long password"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_user_commands(
    configure: Callable[..., Settings],
    engine: Engine,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    make_client: MakeClient,
) -> None:
    configure("password")
    monkeypatch.setenv("ADA_PW", "first long password")
    assert (
        _run(capsys, "user", "add", "ada", "--role", "uploader", "--password-env", "ADA_PW")[0] == 0
    )
    code, _, err = _run(capsys, "user", "add", "ada", "--password-env", "ADA_PW")
    assert code == 2 and "already exists" in err
    code, _, err = _run(capsys, "user", "add", "bob", "--password-env", "UNSET_VAR_X")
    assert code == 2 and "UNSET_VAR_X is not set" in err
    answers = iter(["short", "short"])
    monkeypatch.setattr(getpass, "getpass", lambda _prompt: next(answers))
    code, _, err = _run(capsys, "user", "add", "bob")
    assert code == 2 and "at least 8 characters" in err
    answers = iter(["one password", "another one"])
    assert "differ" in _run(capsys, "user", "add", "bob")[2]

    client = make_client("password")
    assert sign_in(client, "ada", "first long password").status_code == 303
    assert _run(capsys, "user", "set-role", "ada", "admin")[0] == 0
    assert client.get("/api/v1/me").json()["role"] == "admin"
    monkeypatch.setenv("ADA_PW", NEW_PASSWORD)
    assert _run(capsys, "user", "passwd", "ada", "--password-env", "ADA_PW")[0] == 0
    assert client.get("/api/v1/me").status_code == 401  # the password change ended it
    with Session(engine) as db:
        assert check_login(db, "ada", NEW_PASSWORD) is not None
        stored = db.exec(select(User)).one().password_hash or ""
    assert stored.startswith("scrypt$1024$8$1$") and NEW_PASSWORD not in stored
    code, out, _ = _run(capsys, "user", "disable", "ada")
    assert code == 0 and "disabled" in out
    code, out, _ = _run(capsys, "user", "list")
    assert out.splitlines()[1].split()[:4] == ["ada", "admin", "disabled", "password"]
    assert _run(capsys, "user", "set-role", "nobody", "admin")[0] == 2


def test_token_commands(
    configure: Callable[..., Settings], engine: Engine, capsys: pytest.CaptureFixture[str]
) -> None:
    configure("password")
    code, out, err = _run(
        capsys, "token", "create", "--scope", "traces:write", "--scope", "bench:run"
    )
    plaintext = out.strip()
    assert code == 0 and plaintext.startswith("pd_") and "shown once" in err
    assert _run(capsys, "token", "create", "--scope", "traces:read")[0] == 2
    listing = _run(capsys, "token", "list")[1]
    assert plaintext not in listing and plaintext[:10] in listing
    assert "bench:run,traces:write" in listing
    code, out, _ = _run(capsys, "token", "revoke", plaintext[:10] + "...")
    assert code == 0 and "revoked" in out
    with Session(engine) as db:
        assert db.exec(select(ApiToken)).one().revoked_at is not None
    assert _run(capsys, "token", "revoke", "999")[0] == 2


@pytest.mark.parametrize("auth", ["password", "proxy"])
def test_auth_on_allows_binding_beyond_loopback(auth: str) -> None:
    check_bind("0.0.0.0", Settings(auth=auth))
    with pytest.raises(UnsafeBindError, match="PERFDASH_AUTH=password"):
        check_bind("0.0.0.0", Settings(auth="off"))


def test_migration_0009_matches_the_models_and_downgrades(
    settings: Settings, engine: Engine
) -> None:
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        diff = compare_metadata(context, SQLModel.metadata)
    assert [d for d in diff if any(t in str(d) for t in ("'users'", "'sessions'"))] == []
    config = alembic_config(settings.resolved_database_url)
    command.downgrade(config, "0008")
    engine.dispose()
    assert not {"users", "sessions"} & set(inspect(engine).get_table_names())
    command.upgrade(config, "head")
    engine.dispose()
    assert {"users", "sessions"} <= set(inspect(engine).get_table_names())
