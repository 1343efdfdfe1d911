"""Password sign-in, the session cookies, logout, expiry and revocation, throttling, `next`."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from http.cookies import SimpleCookie

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from backend.models.users import LoginSession
from backend.services.auth.rate_limit import LOGIN_BURST
from backend.services.auth.users import disable_user, set_password
from tests.auth.conftest import PASSWORD, MakeClient, csrf_header, form_token, sign_in


def _set_cookies(response) -> dict[str, dict[str, str | bool]]:  # type: ignore[no-untyped-def]
    """Each Set-Cookie header's name and attributes, as a browser reads them."""
    parsed: dict[str, dict[str, str | bool]] = {}
    for header in response.headers.get_list("set-cookie"):
        jar: SimpleCookie = SimpleCookie()
        jar.load(header)
        for name, morsel in jar.items():
            attrs = {k: v for k, v in morsel.items() if v}
            parsed[name] = {"value": morsel.value, **attrs}
    return parsed


def test_sign_in_sets_the_session_cookies_with_their_attributes(
    make_client: MakeClient, users: dict[str, str], engine: Engine
) -> None:
    client = make_client("password")
    response = sign_in(client, "uploader", next_path="/traces?project=llm")
    assert response.status_code == 303
    assert response.headers["location"] == "/traces?project=llm"
    cookies = _set_cookies(response)
    session = cookies["perfdash_session"]
    assert session["httponly"] is True and session["secure"] is True
    assert session["samesite"] == "lax" and session["path"] == "/"
    assert int(str(session["max-age"])) == 12 * 3600
    csrf = cookies["_csrf_token"]
    assert "httponly" not in csrf and csrf["secure"] is True and csrf["samesite"] == "lax"
    # Only a hash of the session id is stored; the CSRF token is the session's own.
    with Session(engine) as db:
        row = db.exec(select(LoginSession)).one()
    assert row.id_hash == hashlib.sha256(str(session["value"]).encode()).hexdigest()
    assert row.csrf_token == csrf["value"]
    me = client.get("/api/v1/me").json()
    assert (me["kind"], me["name"], me["role"]) == ("user", "uploader", "uploader")


def test_cookie_secure_false_drops_the_secure_flag(
    make_client: MakeClient, users: dict[str, str]
) -> None:
    client = make_client("password", cookie_secure="false")
    cookies = _set_cookies(sign_in(client, "viewer"))
    assert "secure" not in cookies["perfdash_session"] and "secure" not in cookies["_csrf_token"]


@pytest.mark.parametrize(
    ("username", "password"), [("viewer", "wrong password"), ("nobody", PASSWORD)]
)
def test_wrong_password_or_unknown_user_is_refused_alike(
    make_client: MakeClient, users: dict[str, str], username: str, password: str
) -> None:
    client = make_client("password")
    response = sign_in(client, username, password)
    assert response.status_code == 401
    assert "wrong username or password" in response.text
    assert "perfdash_session" not in _set_cookies(response)
    assert client.get("/api/v1/me").status_code == 401


def test_sign_in_without_the_form_token_is_refused(
    make_client: MakeClient, users: dict[str, str]
) -> None:
    client = make_client("password")
    form_token(client)  # sets the cookie, but the post below carries another value
    data = {"username": "admin", "password": PASSWORD, "csrf_token": "x" * 43}
    refused = client.post("/login", data=data)
    assert refused.status_code == 403 and "perfdash_session" not in _set_cookies(refused)
    fresh = make_client("password")  # no cookie at all: a cross-site form post
    bare = fresh.post("/login", data={"username": "admin", "password": PASSWORD})
    assert bare.status_code == 403


def test_logout_ends_the_session_and_needs_its_csrf_token(
    make_client: MakeClient, users: dict[str, str], engine: Engine
) -> None:
    client = make_client("password")
    sign_in(client, "viewer")
    old_session = client.cookies["perfdash_session"]
    assert client.post("/logout", data={"csrf_token": "forged"}).status_code == 403
    assert client.get("/api/v1/me").status_code == 200
    out = client.post("/logout", data={"csrf_token": client.cookies["_csrf_token"]})
    assert out.status_code == 303 and out.headers["location"] == "/login"
    assert _set_cookies(out)["perfdash_session"]["value"] == ""
    with Session(engine) as db:
        assert db.exec(select(LoginSession)).all() == []
    replay = make_client("password")
    replay.cookies.set("perfdash_session", old_session)
    assert replay.get("/api/v1/me").status_code == 401


def test_an_expired_session_is_refused(
    make_client: MakeClient, users: dict[str, str], engine: Engine
) -> None:
    client = make_client("password")
    sign_in(client, "admin")
    assert client.get("/api/v1/traces").status_code == 200
    with Session(engine) as db:
        row = db.exec(select(LoginSession)).one()
        row.expires_at = datetime.now(UTC) - timedelta(seconds=1)
        db.add(row)
        db.commit()
    assert client.get("/api/v1/traces").status_code == 401


@pytest.mark.parametrize("revoke", ["disable", "passwd"])
def test_disabling_a_user_or_changing_the_password_ends_their_sessions(
    make_client: MakeClient, users: dict[str, str], engine: Engine, revoke: str
) -> None:
    client = make_client("password")
    sign_in(client, "uploader")
    assert client.get("/api/v1/me").status_code == 200
    with Session(engine) as db:
        if revoke == "disable":
            disable_user(db, "uploader")
        else:
            set_password(db, "uploader", "a brand new password")
    assert client.get("/api/v1/me").status_code == 401
    again = sign_in(make_client("password"), "uploader")
    assert again.status_code == 401  # disabled, or the old password no longer works


def test_a_role_change_applies_to_the_next_request(
    make_client: MakeClient, users: dict[str, str], engine: Engine
) -> None:
    from backend.models.users import Role
    from backend.services.auth.users import set_role

    client = make_client("password")
    sign_in(client, "viewer")
    assert client.get("/api/v1/me").json()["role"] == "viewer"
    with Session(engine) as db:
        set_role(db, "viewer", Role.ADMIN)
    assert client.get("/api/v1/me").json()["role"] == "admin"


def test_failed_sign_ins_are_throttled_per_username(
    make_client: MakeClient, users: dict[str, str]
) -> None:
    client = make_client("password")
    for _ in range(LOGIN_BURST):
        assert sign_in(client, "admin", "guess").status_code == 401
    throttled = sign_in(client, "admin")  # even the right password waits now
    assert throttled.status_code == 429 and int(throttled.headers["retry-after"]) >= 1
    assert "too many failed sign-ins" in throttled.text
    other = make_client("password", peer="127.0.0.9")  # same name from elsewhere: still held
    assert sign_in(other, "admin").status_code == 429
    assert sign_in(other, "viewer").status_code == 303  # other names are not


def test_failed_sign_ins_are_throttled_per_address(
    make_client: MakeClient, users: dict[str, str]
) -> None:
    client = make_client("password", peer="192.0.2.7")
    for i in range(LOGIN_BURST):
        assert sign_in(client, f"guess-{i}", "guess").status_code == 401
    assert sign_in(client, "viewer").status_code == 429
    assert sign_in(make_client("password", peer="192.0.2.8"), "viewer").status_code == 303


def test_successful_sign_ins_do_not_count(make_client: MakeClient, users: dict[str, str]) -> None:
    client = make_client("password")
    for _ in range(LOGIN_BURST + 2):
        assert sign_in(client, "viewer").status_code == 303


@pytest.mark.parametrize(
    ("next_path", "location"),
    [
        ("/traces/abc?tab=kernels", "/traces/abc?tab=kernels"),
        ("//evil.example/x", "/"),
        ("https://evil.example/", "/"),
        ("/\\evil.example", "/"),
        ("/\t/evil.example", "/"),
        ("javascript:alert(1)", "/"),
        ("evil.example", "/"),
        ("/login", "/"),
    ],
)
def test_next_only_leads_to_a_local_path(
    make_client: MakeClient, users: dict[str, str], next_path: str, location: str
) -> None:
    client = make_client("password")
    response = sign_in(client, "viewer", next_path=next_path)
    assert response.status_code == 303 and response.headers["location"] == location


def test_the_form_escapes_what_it_echoes(make_client: MakeClient, users: dict[str, str]) -> None:
    client = make_client("password")
    page = client.get("/login", params={"next": '/x"><script>alert(1)</script>'})
    assert "<script>" not in page.text and "&lt;script&gt;" in page.text
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    token = form_token(client)
    refused = client.post(
        "/login", data={"username": "<img src=x>", "password": "p", "csrf_token": token}
    )
    assert "<img src=x>" not in refused.text and "&lt;img src=x&gt;" in refused.text


def test_pages_redirect_to_sign_in_and_the_api_answers_401(make_client: MakeClient) -> None:
    client = make_client("password")
    page = client.get("/traces/abc?tab=kernels", headers={"Accept": "text/html,*/*"})
    assert page.status_code == 303
    assert page.headers["location"] == "/login?next=%2Ftraces%2Fabc%3Ftab%3Dkernels"
    assert client.get("/_dash-layout", headers={"Accept": "application/json"}).status_code == 401
    assert client.post("/_dash-update-component", json={}).status_code == 401
    api = client.get("/api/v1/traces", headers={"Accept": "text/html"})
    assert api.status_code == 401 and api.headers["www-authenticate"] == "Bearer"
    for open_path in ("/healthz", "/metrics", "/login", "/openapi.json", "/docs"):
        assert client.get(open_path).status_code in (200, 503), open_path


def test_with_auth_off_pages_are_anonymous_and_login_goes_on(make_client: MakeClient) -> None:
    client = make_client("off")
    assert client.get("/api/v1/traces").status_code == 200
    assert client.get("/api/v1/me").json() == {
        "auth": "off", "kind": None, "name": None, "role": None, "scopes": [], "csrf_token": None
    }  # fmt: skip
    assert client.get("/login", params={"next": "/traces"}).headers["location"] == "/traces"
    assert client.post("/api/v1/traces", files={"file": ("t.json", b"{}")}).status_code == 202


def test_me_tells_the_pages_the_sessions_csrf_token(
    make_client: MakeClient, users: dict[str, str]
) -> None:
    client = make_client("password")
    sign_in(client, "viewer")
    assert csrf_header(client)["X-CSRFToken"] == client.get("/api/v1/me").json()["csrf_token"]
