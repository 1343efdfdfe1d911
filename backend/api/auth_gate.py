"""The gate in front of everything `perfdash serve` answers: the API and the Dash pages.

Pure ASGI middleware, so one check covers the API routes and the WSGI-mounted Dash app
alike. For each request it resolves the caller (`backend.services.auth.resolve_credentials`) and:

- answers 403 to an unknown or revoked token, 429 to a token over its rate limit;
- answers 403 to a state-changing request (POST/PUT/PATCH/DELETE) from a session whose
  `X-CSRFToken` header is not the session's CSRF token, on `/api` and on the Dash
  endpoints (`/_dash-update-component`) alike;
- with AUTH on, turns away anonymous callers: a browser navigation (GET asking for HTML)
  is redirected to `/login?next=...`, anything else gets 401;
- refuses a multipart body (a trace upload) from a caller who may not upload before a
  byte of it is read, on any path: FastAPI spools forms before route dependencies run;
- after a proxy sign-in, sets the session cookies on the response and puts them into
  the request's own `Cookie` header, so the pages' calls to the API (which forward that
  header) already carry the session;
- removes the proxy's user header from the request, so nothing behind the gate can read
  one that was not checked.

Routes then check permissions against `request.state.identity` (`backend.api.deps`).
`OPEN_PATHS` skip the gate: health, Prometheus, the API docs, and the login pages, which
check their own form tokens.
"""

from urllib.parse import urlencode

from sqlmodel import Session
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.requests import cookie_parser
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from backend.api.cookies import CSRF_COOKIE, CSRF_HEADER, SESSION_COOKIE, session_cookie_headers
from backend.api.errors import DATABASE_UNAVAILABLE, database_unavailable_response, status_of
from backend.api.errors import headers as error_headers
from backend.api.limits import is_multipart
from backend.core.config import Settings, get_settings
from backend.core.db import get_engine
from backend.services.auth import (
    STATE_CHANGING,
    UPLOAD_TRACE,
    Credentials,
    NewSession,
    Resolution,
    authorize,
    csrf_matches,
    resolve_credentials,
)
from backend.services.errors import ServiceError

OPEN_PATHS = frozenset(
    {"/healthz", "/metrics", "/login", "/logout", "/docs", "/docs/oauth2-redirect", "/redoc",
     "/openapi.json"}
)  # fmt: skip
IDENTITY_KEY = "identity"


def credentials(scope: Scope, settings: Settings) -> Credentials:
    """What the request presents: bearer token, session cookie, proxy header, peer."""
    headers = Headers(scope=scope)
    scheme, _, value = headers.get("authorization", "").partition(" ")
    bearer = value.strip() if scheme.lower() == "bearer" and value.strip() else None
    client = scope.get("client")
    api_read = scope["path"].startswith("/api/") and scope["method"] not in STATE_CHANGING
    return Credentials(
        bearer=bearer,
        session_id=cookie_parser(headers.get("cookie", "")).get(SESSION_COOKIE) or None,
        proxy_user=headers.get(settings.proxy_user_header),
        peer=client[0] if client else None,
        forwarded_for=", ".join(headers.getlist("x-forwarded-for")) or None,
        needs_session=not api_read,
    )


def _resolve(creds: Credentials, settings: Settings) -> Resolution:
    with Session(get_engine()) as db:
        return resolve_credentials(db, creds, settings)


def _wants_page(scope: Scope) -> bool:
    accept = Headers(scope=scope).get("accept", "")
    return scope["method"] in ("GET", "HEAD") and "text/html" in accept


def _login_redirect(scope: Scope) -> Response:
    target = scope["path"]
    if scope.get("query_string"):
        target += "?" + scope["query_string"].decode("latin-1")
    return RedirectResponse("/login?" + urlencode({"next": target}), status_code=303)


def _rewrite_headers(scope: Scope, settings: Settings, new: NewSession | None) -> None:
    """Drop the proxy's user header; after a proxy sign-in, carry the new cookies."""
    drop = {settings.proxy_user_header.lower().encode("latin-1")}
    if new is not None:
        drop.add(b"cookie")
    kept = [(k, v) for k, v in scope["headers"] if k not in drop]
    if new is not None:
        cookies = cookie_parser(Headers(scope=scope).get("cookie", ""))
        cookies |= {SESSION_COOKIE: new.session_id, CSRF_COOKIE: new.csrf_token}
        kept.append((b"cookie", "; ".join(f"{k}={v}" for k, v in cookies.items()).encode()))
    scope["headers"] = kept


def _refusal(error: ServiceError) -> Response:
    return JSONResponse({"detail": str(error)}, status_of(error), headers=error_headers(error))


class AuthGate:
    """Resolve the caller of every request and turn away those who may not pass."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        settings = get_settings()
        creds = credentials(scope, settings)
        try:
            found = (
                Resolution() if creds.empty else await run_in_threadpool(_resolve, creds, settings)
            )
        except ServiceError as e:
            await _refusal(e)(scope, receive, send)
            return
        except DATABASE_UNAVAILABLE as e:  # tokens and sessions live in the database
            await database_unavailable_response(scope["method"], scope["path"], e)(
                scope, receive, send
            )
            return
        identity = found.identity
        send = _with_cookies(send, found.new_session, settings)
        if scope["method"] in STATE_CHANGING and not csrf_matches(
            identity, Headers(scope=scope).get(CSRF_HEADER)
        ):
            detail = (
                f"a signed-in browser must send its {CSRF_COOKIE} cookie's value in the "
                f"{CSRF_HEADER} header with every change; reload the page and try again"
            )
            await JSONResponse({"detail": detail}, 403)(scope, receive, send)
            return
        if identity is None and settings.auth != "off":
            if _wants_page(scope) and not scope["path"].startswith("/api/"):
                await _login_redirect(scope)(scope, receive, send)
                return
            detail = "sign in at /login, or send an API token: Authorization: Bearer <token>"
            reply = JSONResponse({"detail": detail}, 401, headers={"WWW-Authenticate": "Bearer"})
            await reply(scope, receive, send)
            return
        if is_multipart(scope):
            try:
                authorize(identity, UPLOAD_TRACE, settings.auth)
            except ServiceError as e:
                await _refusal(e)(scope, receive, send)
                return
        scope.setdefault("state", {})[IDENTITY_KEY] = identity
        _rewrite_headers(scope, settings, found.new_session)
        await self.app(scope, receive, send)


def _with_cookies(send: Send, new: NewSession | None, settings: Settings) -> Send:
    """`send`, adding the session cookies to the response when a proxy sign-in made one
    (whatever the answer: a refused first POST must still leave the browser its token)."""
    if new is None:
        return send
    cookies = session_cookie_headers(new, settings)

    async def send_with_cookies(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), *cookies]}
        await send(message)

    return send_with_cookies
