"""CSRF: a change made with a session cookie must echo the session's CSRF token.

On the API (in process) and on Dash's callback endpoint of a real `perfdash serve`,
where the token travels from the browser to the page server and, forwarded by the
dashboard's API client, on to the API.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import httpx
import pytest
from sqlalchemy.engine import Engine

from tests.auth.conftest import TRACE_BYTES, MakeClient, csrf_header, sign_in, upload
from tests.browser.conftest import Server, perfdash
from tests.factories import token_headers

PASSWORD = "a long test password"


@pytest.mark.parametrize(
    ("sent", "status"), [(None, 403), ("wrong", 403), ("", 403), ("right", 202)]
)
def test_api_changes_by_cookie_need_the_sessions_csrf_token(
    make_client: MakeClient, users: dict[str, str], sent: str | None, status: int
) -> None:
    client = make_client("password")
    sign_in(client, "admin")
    headers = {} if sent is None else {"X-CSRFToken": sent}
    if sent == "right":
        headers = csrf_header(client)
    response = upload(client, headers)
    assert response.status_code == status, response.text
    if status == 403:
        assert "X-CSRFToken" in response.json()["detail"]
        listed = client.get("/api/v1/traces").json()  # reads need no token
        assert listed["count"] == 0


def test_every_state_changing_method_is_checked(
    make_client: MakeClient, users: dict[str, str]
) -> None:
    client = make_client("password")
    sign_in(client, "admin")
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        response = client.request(method, "/api/v1/slas/none")
        assert response.status_code == 403 and "X-CSRFToken" in response.text, method
    ok = client.delete("/api/v1/slas/none", headers=csrf_header(client))
    assert ok.status_code == 404  # past the CSRF check, to the route


def test_another_sessions_token_does_not_pass(
    make_client: MakeClient, users: dict[str, str]
) -> None:
    mine, theirs = make_client("password"), make_client("password")
    sign_in(mine, "admin")
    sign_in(theirs, "admin")
    assert upload(mine, csrf_header(theirs)).status_code == 403


def test_token_requests_need_no_csrf_token(make_client: MakeClient, engine: Engine) -> None:
    client = make_client("password")
    assert upload(client, token_headers(engine, "traces:write", name="ci")).status_code == 202


def _sign_in_http(server: Server, username: str) -> dict[str, str]:
    """Sign in over HTTP; the cookies come back as a dict (they are Secure, so an http
    cookie jar would not send them; a browser on 127.0.0.1 does)."""
    with httpx.Client(base_url=server.base_url) as http:
        form = http.get("/login")
        token = re.search(r'name="csrf_token" value="([^"]+)"', form.text)
        assert token is not None
        cookie = {"_csrf_token": form.cookies["_csrf_token"]}
        data = {"username": username, "password": PASSWORD, "csrf_token": token.group(1)}
        signed = http.post("/login", data=data, headers=_cookie_header(cookie))
        assert signed.status_code == 303, signed.text
        return {k: signed.cookies[k] for k in ("perfdash_session", "_csrf_token")}


def _cookie_header(cookies: dict[str, str]) -> dict[str, str]:
    return {"Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items())}


def _table_refresh_callback() -> dict[str, object]:
    """The request Dash's renderer sends when the traces page polls its list (the upload
    itself goes from the browser to the API, dashboard/assets/upload/)."""
    return {
        "output": "..traces-table.children...traces-rows.data...traces-seen.data..",
        "outputs": [
            {"id": "traces-table", "property": "children"},
            {"id": "traces-rows", "property": "data"},
            {"id": "traces-seen", "property": "data"},
        ],
        "inputs": [{"id": "traces-poll", "property": "n_intervals", "value": 1}],
        "state": [
            {"id": "traces-query", "property": "data", "value": {}},
            {"id": "traces-seen", "property": "data", "value": ""},
            {"id": "traces-selection", "property": "data", "value": []},
        ],
        "changedPropIds": ["traces-poll.n_intervals"],
    }


@pytest.mark.integration
def test_dash_callbacks_by_cookie_need_the_sessions_csrf_token(
    serve_with: Callable[..., Server],
) -> None:
    """The page's upload, as the browser makes it: the file to the API, then the list's
    refresh through a Dash callback; each needs the session's CSRF token."""
    server = serve_with("--no-worker", auth="password", scrypt_n="1024")
    perfdash(
        server, "user", "add", "ada", "--role", "uploader", "--password-env", "PW", PW=PASSWORD
    )
    cookies = _sign_in_http(server, "ada")
    files = {"file": ("tiny.json", TRACE_BYTES, "application/octet-stream")}
    api = server.base_url + "/api/v1/traces"
    url = server.base_url + "/_dash-update-component"
    for sent in (None, "wrong"):
        headers = _cookie_header(cookies) | ({"X-CSRFToken": sent} if sent else {})
        refused = httpx.post(api, files=files, headers=headers)
        assert refused.status_code == 403 and "X-CSRFToken" in refused.text
        refused = httpx.post(url, json=_table_refresh_callback(), headers=headers)
        assert refused.status_code == 403 and "X-CSRFToken" in refused.text
    headers = _cookie_header(cookies) | {"X-CSRFToken": cookies["_csrf_token"]}
    uploaded = httpx.post(api, files=files, headers=headers)
    assert uploaded.status_code == 202, uploaded.text
    accepted = httpx.post(url, json=_table_refresh_callback(), headers=headers)
    assert accepted.status_code == 200, accepted.text
    assert "tiny.json" in json.dumps(accepted.json())
    listed = httpx.get(server.base_url + "/api/v1/traces", headers=_cookie_header(cookies))
    assert [t["name"] for t in listed.json()["items"]] == ["tiny.json"]
