"""The dashboard's only I/O: typed calls to the perfdash HTTP API.

The dashboard is a client of the API like any CI job, so it never imports the backend's
models or database. Every call has a timeout and raises `ApiError` with the API's
`detail`, which pages show as is. Inside a page request, every call carries the
browser's `Cookie` and `X-CSRFToken` headers, so the API sees the signed-in user (and
checks their role and CSRF token) exactly as if the browser had called it.

This module is the transport only; the calls of each API area and the shapes they return
live in that area's module beside it (`traces`, `me`, `timeline`, ...).

Public surface: `ApiClient`, `ApiError`, `current_client`, `install_client`, `detail_text`.
"""

from __future__ import annotations

from typing import Any

import flask
import httpx

__all__ = ["ApiClient", "ApiError", "current_client", "detail_text", "install_client"]

_CONFIG_KEY = "PERFDASH_API_CLIENT"
_PREFIX = "/api/v1"
# What identifies the browser's user to the API: the session cookie, and the CSRF token
# Dash's renderer copies from the `_csrf_token` cookie into every callback request.
_FORWARDED_HEADERS = ("Cookie", "X-CSRFToken")


class ApiError(Exception):
    """The API answered with an error, or could not be reached (`status` is None)."""

    def __init__(self, status: int | None, detail: str) -> None:
        super().__init__(f"{status or 'no response'}: {detail}")
        self.status = status
        self.detail = detail


def _detail(response: httpx.Response) -> str:
    """FastAPI's `detail` as one line: a string, or the messages of a validation error."""
    try:
        body = response.json()
    except ValueError:
        body = None
    return detail_text(body, f"{response.status_code} {response.reason_phrase}".strip())


def detail_text(body: Any, fallback: str) -> str:
    """The `detail` of a decoded API error body as one line, or `fallback` when it has none
    (the browser's own calls to the API, such as uploads, read theirs in assets/upload/send.js)."""
    detail = body.get("detail") if isinstance(body, dict) else None
    if isinstance(detail, str):
        return detail
    if isinstance(detail, list):
        return "; ".join(str(d.get("msg", d)) if isinstance(d, dict) else str(d) for d in detail)
    return fallback


class ApiClient:
    """Synchronous client for `/api/v1`; a fresh connection per call keeps it thread-safe."""

    def __init__(self, base_url: str, *, timeout_s: float = 10.0) -> None:
        self.base_url = base_url.rstrip("/")
        self._timeout = httpx.Timeout(timeout_s, connect=min(timeout_s, 3.0))

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """The one place requests leave: the browser's identity on, errors as ApiError.

        Trace uploads do not pass here: the browser sends them to the API itself
        (dashboard/assets/upload/), so no file is ever held by the page server."""
        try:
            with httpx.Client(
                base_url=self.base_url, timeout=self._timeout, headers=_browser_identity()
            ) as client:
                response = client.request(method, _PREFIX + path, **kwargs)
        except httpx.HTTPError as e:
            raise ApiError(None, f"cannot reach the API at {self.base_url}: {e}") from e
        if response.is_error:
            raise ApiError(response.status_code, _detail(response))
        return response

    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self._send(method, path, **kwargs)
        return None if response.status_code == 204 else response.json()

    def get(self, path: str, params: dict[str, Any] | None = None) -> Any:
        """GET `/api/v1{path}` and return the decoded JSON (area modules build on this)."""
        return self._request("GET", path, params=params)

    def post(
        self,
        path: str,
        json: Any = None,
        params: dict[str, Any] | None = None,
        *,
        timeout_s: float | None = None,
    ) -> Any:
        """POST JSON to `/api/v1{path}` and return the decoded JSON; `timeout_s` replaces
        the client's read timeout for a call the API may work on longer (a SQL query)."""
        extra = {} if timeout_s is None else {"timeout": httpx.Timeout(timeout_s, connect=3.0)}
        return self._request("POST", path, json=json, params=params, **extra)

    def put(self, path: str, json: Any = None) -> Any:
        """PUT JSON to `/api/v1{path}` and return the decoded JSON."""
        return self._request("PUT", path, json=json)

    def get_text(self, path: str, params: dict[str, Any] | None = None) -> str:
        """GET a non-JSON body (Markdown, CSV) from `/api/v1{path}`."""
        return self._send("GET", path, params=params).text

    def delete(self, path: str) -> None:
        """DELETE `/api/v1{path}`."""
        self._request("DELETE", path)


def _browser_identity() -> dict[str, str]:
    """The browser's session headers when called while serving a page or callback."""
    if not flask.has_request_context():
        return {}
    headers = flask.request.headers
    return {name: headers[name] for name in _FORWARDED_HEADERS if name in headers}


def install_client(server: flask.Flask, client: ApiClient) -> None:
    """Attach the client to the Flask server, so layouts and callbacks of this app find it."""
    server.config[_CONFIG_KEY] = client


def current_client() -> ApiClient:
    """The client of the app serving the current request."""
    client = flask.current_app.config[_CONFIG_KEY]
    assert isinstance(client, ApiClient)
    return client
