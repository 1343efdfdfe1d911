"""AUTH=proxy: the proxy's user header is believed from TRUSTED_PROXIES only, and starts
a session (so CSRF works as for a password sign-in); with AUTH=password it is ignored."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from backend.models.users import LoginSession, Role, User
from backend.services.auth.users import add_user, disable_user
from tests.auth.conftest import PASSWORD, MakeClient, csrf_header, upload
from tests.browser.conftest import Server

BOB = {"X-Forwarded-User": "bob"}


def _users(engine: Engine) -> dict[str, tuple[str, bool]]:
    with Session(engine) as db:
        return {u.username: (u.role, u.password_hash is None) for u in db.exec(select(User))}


def test_a_trusted_proxys_header_signs_the_user_in(make_client: MakeClient, engine: Engine) -> None:
    client = make_client("proxy")
    first = client.get("/api/v1/me", headers=BOB)  # an API read: no session needed
    assert first.status_code == 200
    assert (first.json()["name"], first.json()["role"]) == ("bob", "viewer")
    assert "perfdash_session" not in first.cookies
    assert _users(engine) == {"bob": ("viewer", True)}  # created on first sight, no password
    page = client.get("/", headers=BOB | {"Accept": "text/html"})  # a page load: a session
    assert {"perfdash_session", "_csrf_token"} <= set(page.cookies.keys())
    again = client.get("/traces", headers=BOB | {"Accept": "text/html"})
    assert "perfdash_session" not in again.cookies  # the cookie now matches the header
    cookie_only = client.get("/api/v1/me")  # the dashboard's calls forward only the cookie
    assert cookie_only.json()["name"] == "bob"
    with Session(engine) as db:
        assert len(db.exec(select(LoginSession)).all()) == 1


@pytest.mark.parametrize(
    ("auth", "peer", "env", "headers"),
    [
        ("proxy", "203.0.113.5", {}, BOB),  # not a trusted peer
        ("proxy", "::ffff:198.51.100.1", {}, BOB),
        ("proxy", "127.0.0.1", {"trusted_proxies": '["10.0.0.0/8"]'}, BOB),
        ("proxy", "127.0.0.1", {"proxy_user_header": "X-Auth-Request-User"}, BOB),
        ("password", "127.0.0.1", {}, BOB),  # a spoofed header with password sign-in
        ("off", "127.0.0.1", {}, BOB),
    ],
)
def test_the_header_is_ignored_from_untrusted_peers_and_other_modes(
    make_client: MakeClient,
    engine: Engine,
    auth: str,
    peer: str,
    env: dict[str, str],
    headers: dict[str, str],
) -> None:
    with Session(engine) as db:
        add_user(db, "bob", PASSWORD, Role.ADMIN)
    client = make_client(auth, peer=peer, **env)
    me = client.get("/api/v1/me", headers=headers)
    if auth == "off":
        assert me.json()["kind"] is None  # anonymous, as before accounts existed
    else:
        assert me.status_code == 401
    assert "perfdash_session" not in me.cookies


@pytest.mark.parametrize(
    ("env", "peer", "header"),
    [
        ({"trusted_proxies": '["10.0.0.0/8"]'}, "10.2.3.4", "X-Forwarded-User"),
        ({"proxy_user_header": "X-Auth-Request-User"}, "::1", "X-Auth-Request-User"),
        ({}, "::ffff:127.0.0.1", "X-Forwarded-User"),
    ],
)
def test_trusted_proxies_and_the_header_name_are_settings(
    make_client: MakeClient, env: dict[str, str], peer: str, header: str
) -> None:
    client = make_client("proxy", peer=peer, **env)
    assert client.get("/api/v1/me", headers={header: "carol"}).json()["name"] == "carol"


def test_new_users_get_the_default_role_and_known_users_keep_theirs(
    make_client: MakeClient, engine: Engine
) -> None:
    with Session(engine) as db:
        add_user(db, "root", None, Role.ADMIN)
    client = make_client("proxy", proxy_default_role="uploader")
    assert client.get("/api/v1/me", headers={"X-Forwarded-User": "newbie"}).json()["role"] == (
        "uploader"
    )
    assert client.get("/api/v1/me", headers={"X-Forwarded-User": "root"}).json()["role"] == "admin"


def test_the_header_wins_over_another_users_session(make_client: MakeClient) -> None:
    client = make_client("proxy")
    client.get("/", headers=BOB)
    assert client.get("/api/v1/me").json()["name"] == "bob"
    switched = client.get("/", headers={"X-Forwarded-User": "carol"})
    assert "perfdash_session" in switched.cookies
    assert client.get("/api/v1/me").json()["name"] == "carol"


def test_changes_through_the_proxy_need_the_csrf_token(make_client: MakeClient) -> None:
    client = make_client("proxy", proxy_default_role="uploader")
    assert upload(client, BOB).status_code == 403  # the first request starts the session
    assert upload(client, BOB).status_code == 403  # the proxy's header alone is not enough
    assert upload(client, BOB | csrf_header(client)).status_code == 202


def test_a_disabled_user_is_refused_even_by_the_proxy(
    make_client: MakeClient, engine: Engine
) -> None:
    client = make_client("proxy")
    assert client.get("/api/v1/me", headers=BOB).status_code == 200
    with Session(engine) as db:
        disable_user(db, "bob")
    assert client.get("/api/v1/me").status_code == 401
    refused = client.get("/api/v1/me", headers=BOB)
    assert refused.status_code == 403 and "disabled" in refused.text


@pytest.mark.integration
def test_behind_a_proxy_on_loopback_the_pages_and_api_see_the_user(
    serve_with: Callable[..., Server],
) -> None:
    """`perfdash serve` keeps the TCP peer as the client (a proxy's X-Forwarded-For does not
    make it untrusted), and the first page load already shows the user: the session the
    header started reaches the dashboard's own API calls."""
    server = serve_with("--no-worker", auth="proxy")
    proxied = {"X-Forwarded-User": "pat", "X-Forwarded-For": "203.0.113.9"}
    me = httpx.get(server.base_url + "/api/v1/me", headers=proxied)
    assert me.status_code == 200 and me.json()["name"] == "pat"
    layout = httpx.get(server.base_url + "/_dash-layout", headers=proxied)
    assert layout.status_code == 200 and "perfdash_session" in layout.cookies
    assert '"pat"' in json.dumps(layout.json()) and '"viewer"' in json.dumps(layout.json())
    assert httpx.get(server.base_url + "/api/v1/me").status_code == 401


@pytest.mark.integration
def test_a_serve_that_trusts_another_proxy_ignores_loopback(
    serve_with: Callable[..., Server],
) -> None:
    server = serve_with("--no-worker", auth="proxy", trusted_proxies='["10.0.0.0/8"]')
    page = httpx.get(server.base_url + "/", headers={**BOB, "Accept": "text/html"})
    assert page.status_code == 303 and page.headers["location"].startswith("/login?next=")
    assert httpx.get(server.base_url + "/api/v1/me", headers=BOB).status_code == 401
