"""`/login` and `/logout`: a server-rendered sign-in form, outside the Dash app.

Plain HTML with every interpolated value escaped, its own styles inline and a strict
Content-Security-Policy, so the page needs nothing the gate guards. The form carries a
login CSRF token (double submit: the `_csrf_token` cookie and a hidden field must match),
so another site cannot sign a browser into an account of its choosing. After sign-in the
browser goes to `next` only if it is a path on this server.

Both paths skip the gate (`OPEN_PATHS`), so each checks its own token here.
"""

import hmac
import re
import secrets
from html import escape
from typing import Annotated
from urllib.parse import urlsplit

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from backend.api.auth_gate import credentials
from backend.api.cookies import (
    CSRF_COOKIE,
    CSRF_HEADER,
    SESSION_COOKIE,
    clear_session_cookies,
    set_csrf_cookie,
    set_session_cookies,
)
from backend.api.deps import SessionDep, SettingsDep
from backend.api.errors import headers as error_headers
from backend.api.errors import status_of
from backend.core.config import Settings
from backend.services.auth import find_session, revoke_session, sign_in
from backend.services.errors import ServiceError

router = APIRouter(tags=["login"], include_in_schema=False)
_TOKEN = re.compile(r"[A-Za-z0-9_-]{32,128}")
LOGIN_FORM_TTL_S = 3600
_SECURITY_HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
}
_STYLE = (
    "body{font:15px system-ui,sans-serif;background:#f4f5f7;color:#1f2328;margin:0}"
    "main{max-width:22rem;margin:12vh auto;background:#fff;border:1px solid #d0d7de;"
    "border-radius:8px;padding:1.5rem 1.75rem}h1{font-size:1.3rem;margin:0 0 1rem}"
    "label{display:block;margin:.75rem 0 .25rem;font-weight:600}"
    "input[type=text],input[type=password]{width:100%;box-sizing:border-box;padding:.45rem;"
    "border:1px solid #d0d7de;border-radius:6px;font:inherit}"
    "button{margin-top:1.25rem;width:100%;padding:.55rem;border:0;border-radius:6px;"
    "background:#1f6feb;color:#fff;font:inherit;font-weight:600;cursor:pointer}"
    ".error{background:#ffebe9;border:1px solid #ff8182;border-radius:6px;padding:.5rem .75rem}"
)


def safe_next(target: str | None) -> str:
    """`target` if it is a path on this server, else `/` (no other host, no scheme).

    >>> [safe_next(t) for t in ("/traces?a=1", "//evil.example", "/\\\\evil.example",
    ...  "https://evil.example/", "javascript:alert(1)", "/\\t/evil.example", "/login")]
    ['/traces?a=1', '/', '/', '/', '/', '/', '/']
    """
    if not target or not target.startswith("/") or target.startswith("//"):
        return "/"
    if "\\" in target or any(ord(c) < 0x20 or ord(c) == 0x7F for c in target):
        return "/"  # browsers read `/\host` and `/<tab>/host` as `//host`
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or parts.path in ("/login", "/logout"):
        return "/"
    return target


def _page(body: str, status: int = 200, title: str = "Sign in") -> HTMLResponse:
    html = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)} · perfdash</title><style>{_STYLE}</style></head>"
        f"<body><main><h1>perfdash</h1>{body}</main></body></html>"
    )
    return HTMLResponse(html, status_code=status, headers=_SECURITY_HEADERS)


def _form_page(
    settings: Settings,
    target: str,
    csrf: str | None,
    error: str | None = None,
    status: int = 200,
    username: str = "",
) -> HTMLResponse:
    """The sign-in form; a fresh login CSRF token unless the browser's cookie has one."""
    token = csrf if csrf and _TOKEN.fullmatch(csrf) else secrets.token_urlsafe(32)
    notice = f'<p class="error" role="alert">{escape(error)}</p>' if error else ""
    body = (
        f'{notice}<form method="post" action="/login">'
        f'<input type="hidden" name="csrf_token" value="{escape(token)}">'
        f'<input type="hidden" name="next" value="{escape(target)}">'
        '<label for="username">Username</label>'
        f'<input id="username" name="username" type="text" value="{escape(username)}" '
        'autocomplete="username" required autofocus>'
        '<label for="password">Password</label>'
        '<input id="password" name="password" type="password" '
        'autocomplete="current-password" required>'
        '<button type="submit">Sign in</button></form>'
    )
    response = _page(body, status)
    if token != csrf:
        set_csrf_cookie(response, token, settings, LOGIN_FORM_TTL_S)
    return response


def _not_password_mode(settings: Settings, target: str) -> Response:
    if settings.auth == "off":
        return RedirectResponse(target, status_code=303)
    return _page(
        "<p>Sign-in is done by the reverse proxy in front of perfdash "
        f"(<code>PERFDASH_AUTH={escape(settings.auth)}</code>). Open perfdash through "
        "the proxy's address.</p>",
        status=403 if settings.auth == "proxy" else 404,
    )


@router.get("/login", response_class=HTMLResponse)
def login_form(request: Request, settings: SettingsDep, next: str = "/") -> Response:
    """The sign-in form (AUTH=password); with AUTH=off, straight on to `next`."""
    target = safe_next(next)
    if settings.auth != "password":
        return _not_password_mode(settings, target)
    return _form_page(settings, target, request.cookies.get(CSRF_COOKIE))


@router.post("/login", response_class=HTMLResponse)
def login(
    request: Request,
    db: SessionDep,
    settings: SettingsDep,
    username: Annotated[str, Form(max_length=256)] = "",
    password: Annotated[str, Form(max_length=1024)] = "",
    csrf_token: Annotated[str, Form(max_length=256)] = "",
    next: Annotated[str, Form(max_length=2048)] = "/",
) -> Response:
    """Check the password; on success start a session and go to `next`."""
    target = safe_next(next)
    if settings.auth != "password":
        return _not_password_mode(settings, target)
    cookie = request.cookies.get(CSRF_COOKIE, "")
    if not (cookie and csrf_token and hmac.compare_digest(cookie, csrf_token)):
        error = "The form expired or came from another site. Please sign in again."
        return _form_page(settings, target, None, error, 403, username)
    try:
        new = sign_in(db, credentials(request.scope, settings), username, password, settings)
    except ServiceError as e:
        refused = _form_page(settings, target, cookie, str(e), status_of(e), username)
        refused.headers.update(error_headers(e))
        return refused
    response = RedirectResponse(target, status_code=303)
    set_session_cookies(response, new, settings)
    return response


@router.post("/logout")
def logout(
    request: Request,
    db: SessionDep,
    settings: SettingsDep,
    csrf_token: Annotated[str, Form(max_length=256)] = "",
) -> Response:
    """End the session (the CSRF token comes as a form field or in X-CSRFToken)."""
    session_id = request.cookies.get(SESSION_COOKIE)
    found = find_session(db, session_id) if session_id else None
    if found is not None and session_id is not None:
        sent = csrf_token or request.headers.get(CSRF_HEADER, "")
        if not (sent and hmac.compare_digest(found[0].csrf_token, sent)):
            return _page("<p>Sign-out was refused: reload the page and try again.</p>", 403)
        revoke_session(db, session_id)
    response = RedirectResponse("/login", status_code=303)
    clear_session_cookies(response, settings)
    return response
