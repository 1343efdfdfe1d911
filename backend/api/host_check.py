"""Answer only requests whose `Host` header names this server (DNS-rebinding guard).

A web page on `rebind.evil.example` can make its name resolve to 127.0.0.1 and then
drive a loopback perfdash with `AUTH=off` from the victim's browser: the browser thinks
it talks to the attacker's origin, so the same-origin policy does not stop it. The
request still carries `Host: rebind.evil.example`, so refusing unknown hosts closes it.

Public surface: `AllowedHosts`, `allowed_hosts`, `host_name`.
"""

from collections.abc import Iterable

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from backend.core.config import Settings

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
_WILDCARD_BINDS = ("", "0.0.0.0", "::")
_EXEMPT_PATHS = ("/healthz",)  # load balancers probe by address; it tells nothing


def allowed_hosts(settings: Settings, bind_host: str) -> frozenset[str]:
    """`ALLOWED_HOSTS`, else the loopback names plus the host `serve` binds (lower case).

    A wildcard bind (0.0.0.0, ::) adds nothing: the names a deployment is reached by are
    not knowable here, so they must be listed in `PERFDASH_ALLOWED_HOSTS`.
    """
    if settings.allowed_hosts:
        return frozenset(h.lower() for h in settings.allowed_hosts)
    hosts = set(LOOPBACK_NAMES)
    if bind_host not in _WILDCARD_BINDS:
        hosts.add(bind_host.strip("[]").lower())
    return frozenset(hosts)


def host_name(header: str) -> str:
    """The name in a `Host` header, without port or IPv6 brackets, lower case.

    >>> host_name("[::1]:8000"), host_name("LocalHost:80"), host_name("example.org")
    ('::1', 'localhost', 'example.org')
    """
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].partition("]")[0]
    return header.rpartition(":")[0] if header.count(":") == 1 else header


class AllowedHosts:
    """Answer 400 to an HTTP request whose `Host` is not allowed (`*` allows any)."""

    def __init__(self, app: ASGIApp, hosts: Iterable[str]) -> None:
        self.app = app
        self.hosts = frozenset(hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or "*" in self.hosts:
            await self.app(scope, receive, send)
            return
        header = dict(scope["headers"]).get(b"host", b"").decode("latin-1")
        if host_name(header) in self.hosts or scope["path"] in _EXEMPT_PATHS:
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        detail = (
            f"Host {header[:200]!r} is not served here; list it in PERFDASH_ALLOWED_HOSTS if "
            "this server is reached by that name"
        )
        await JSONResponse({"detail": detail}, 400)(scope, receive, send)
