"""The two cookies of a signed-in browser, set and cleared in one place.

`perfdash_session` carries the session id: HttpOnly (scripts never see it), SameSite=Lax
(other sites' forms and scripts do not send it; following a link still does), Secure per
COOKIE_SECURE, Path=/. `_csrf_token` carries the session's CSRF token, readable by
script because Dash's renderer copies it into the `X-CSRFToken` header of every
callback (`getCSRFHeader` in dash-renderer); those names are Dash's defaults.
"""

from starlette.responses import Response

from backend.core.config import Settings
from backend.services.auth import NewSession

SESSION_COOKIE = "perfdash_session"
CSRF_COOKIE = "_csrf_token"
CSRF_HEADER = "X-CSRFToken"


def set_csrf_cookie(response: Response, value: str, settings: Settings, max_age_s: int) -> None:
    """The CSRF cookie alone (the login form's token before a session exists)."""
    response.set_cookie(
        CSRF_COOKIE,
        value,
        max_age=max_age_s,
        path="/",
        secure=settings.cookie_secure,
        httponly=False,
        samesite="lax",
    )


def set_session_cookies(response: Response, new: NewSession, settings: Settings) -> None:
    """Hand a new session to the browser."""
    response.set_cookie(
        SESSION_COOKIE,
        new.session_id,
        max_age=new.max_age_s,
        path="/",
        secure=settings.cookie_secure,
        httponly=True,
        samesite="lax",
    )
    set_csrf_cookie(response, new.csrf_token, settings, new.max_age_s)


def clear_session_cookies(response: Response, settings: Settings) -> None:
    """Make the browser forget both cookies (logout)."""
    for name, httponly in ((SESSION_COOKIE, True), (CSRF_COOKIE, False)):
        response.delete_cookie(
            name, path="/", secure=settings.cookie_secure, httponly=httponly, samesite="lax"
        )


def session_cookie_headers(new: NewSession, settings: Settings) -> list[tuple[bytes, bytes]]:
    """The `Set-Cookie` headers of `set_session_cookies`, for a raw ASGI response."""
    response = Response()
    set_session_cookies(response, new, settings)
    return [(k, v) for k, v in response.raw_headers if k == b"set-cookie"]
