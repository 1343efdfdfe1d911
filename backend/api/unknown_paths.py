"""The last route of the API: every `/api/...` path that no route serves answers JSON.

`perfdash serve` mounts the Dash pages at `/`, and a mount at `/` matches every path, so
without this route a mistyped API path got the dashboard's HTML with status 200 (and a
wrong method on a real route got it too, instead of 405). Registered after every other
route, it only sees what they did not match.

Public surface: `install_unknown_api_paths`.
"""

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.routing import Match, Mount

API_PREFIX = "/api"
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


def _allowed_methods(request: Request) -> set[str]:
    """Methods that some other API route serves at this path (FastAPI nests included
    routers, so each method is tried against the top-level routes rather than read off
    them; mounts, such as the pages at `/`, match everything and are left out)."""
    routes = [
        r
        for r in request.app.router.routes
        if not isinstance(r, Mount) and getattr(r, "endpoint", None) is not _unknown
    ]
    allowed = set()
    for method in METHODS:
        scope = {**request.scope, "method": method}
        if any(route.matches(scope)[0] is Match.FULL for route in routes):
            allowed.add(method)
    return allowed


async def _unknown(request: Request) -> JSONResponse:
    allowed = _allowed_methods(request)
    where = f"{request.method} {request.url.path}"
    if allowed:
        return JSONResponse(
            status_code=405,
            content={"detail": f"method not allowed: {where}"},
            headers={"Allow": ", ".join(sorted(allowed))},
        )
    return JSONResponse(status_code=404, content={"detail": f"no API route: {where}"})


def install_unknown_api_paths(app: FastAPI) -> None:
    """Add the catch-all; call after every router is included."""
    for path in (API_PREFIX, f"{API_PREFIX}/{{rest:path}}"):
        app.add_api_route(path, _unknown, methods=METHODS, include_in_schema=False)
