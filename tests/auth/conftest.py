"""Auth fixtures: the app in a chosen AUTH mode on the per-test database, users, sign-in.

Clients talk to `https://testserver`, since the session cookies are Secure by default and
a cookie jar sends those over HTTPS only. scrypt runs at N=2**10 (SCRYPT_N) to keep the
tests fast; `test_passwords.py` checks the default cost on its own.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine
from sqlmodel import Session

from backend.core.config import Settings, get_settings
from backend.main import create_app
from backend.models.users import Role
from backend.services.auth.rate_limit import login_buckets, token_buckets
from backend.services.auth.users import add_user
from tests.browser.conftest import serve_with  # noqa: F401  (a real `perfdash serve`)

PASSWORD = "correct horse battery"
FAST_SCRYPT_N = "1024"
TRACE_BYTES = b'{"traceEvents": []}'
_CSRF_FIELD = re.compile(r'name="csrf_token" value="([^"]+)"')

MakeClient = Callable[..., TestClient]


@pytest.fixture
def configure(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., Settings]]:
    """Re-read the settings with AUTH and other PERFDASH_* variables set for this test
    (the rate-limit buckets start empty for each test, and are shared by its clients)."""
    login_buckets.cache_clear()
    token_buckets.cache_clear()

    def apply(auth: str = "password", **env: str) -> Settings:
        monkeypatch.setenv("PERFDASH_AUTH", auth)
        monkeypatch.setenv("PERFDASH_SCRYPT_N", FAST_SCRYPT_N)
        for key, value in env.items():
            monkeypatch.setenv(f"PERFDASH_{key.upper()}", value)
        get_settings.cache_clear()
        return get_settings()

    yield apply
    login_buckets.cache_clear()
    token_buckets.cache_clear()


@pytest.fixture
def make_client(configure: Callable[..., Settings]) -> Iterator[MakeClient]:
    """`make_client(auth, peer=..., **env)`: a client of a fresh app in that mode."""
    opened: list[TestClient] = []

    def make(auth: str = "password", peer: str = "127.0.0.1", **env: str) -> TestClient:
        configure(auth, **env)
        client = TestClient(
            create_app(),
            base_url="https://testserver",
            client=(peer, 40000),
            follow_redirects=False,
        )
        client.__enter__()
        opened.append(client)
        return client

    yield make
    for client in opened:
        client.__exit__(None, None, None)


@pytest.fixture
def users(engine: Engine, configure: Callable[..., Settings]) -> dict[str, str]:
    """One user per role, named after it, all with PASSWORD."""
    configure("password")
    with Session(engine) as db:
        for role in Role:
            add_user(db, role.value, PASSWORD, role)
    return {role.value: PASSWORD for role in Role}


def form_token(client: TestClient, next_path: str = "/") -> str:
    """Open the sign-in form and return its login CSRF token (also set as a cookie)."""
    page = client.get("/login", params={"next": next_path})
    assert page.status_code == 200, page.text
    match = _CSRF_FIELD.search(page.text)
    assert match is not None
    return match.group(1)


def sign_in(
    client: TestClient, username: str, password: str = PASSWORD, next_path: str = "/"
) -> httpx.Response:
    """Post the sign-in form the way a browser does; returns the response."""
    token = form_token(client, next_path)
    return client.post(
        "/login",
        data={"username": username, "password": password, "csrf_token": token, "next": next_path},
    )


def csrf_header(client: TestClient) -> dict[str, str]:
    """What Dash's renderer sends: the `_csrf_token` cookie's value in X-CSRFToken."""
    return {"X-CSRFToken": client.cookies["_csrf_token"]}


def upload(
    client: TestClient, headers: dict[str, str] | None = None, body: bytes = TRACE_BYTES
) -> httpx.Response:
    """POST a tiny trace to the API."""
    files = {"file": ("tiny.json", body, "application/json")}
    return client.post("/api/v1/traces", files=files, headers=headers or {})
