"""`create_app()`: the FastAPI application (API only; `perfdash serve` adds the pages)."""

from collections.abc import Iterable

from fastapi import FastAPI

from backend.api.auth_gate import AuthGate
from backend.api.errors import install_error_handlers
from backend.api.host_check import AllowedHosts
from backend.api.limits import BodySizeLimit
from backend.api.main import api_router
from backend.api.routes import health, login, prometheus
from backend.api.unknown_paths import install_unknown_api_paths


def create_app(allowed_hosts: Iterable[str] | None = None) -> FastAPI:
    """Build the API app. No I/O happens here.

    `allowed_hosts` turns on the `Host` check (`perfdash serve` always passes it); tests
    that drive the app in-process leave it off.
    """
    app = FastAPI(
        title="perfdash",
        version="0.1.0",
        description="GPU performance traces, benchmark metrics and SLAs.",
    )
    app.include_router(health.router)
    app.include_router(prometheus.router)
    app.include_router(login.router)
    app.include_router(api_router)
    install_unknown_api_paths(app)  # after every router: it answers what they do not
    install_error_handlers(app)
    app.add_middleware(BodySizeLimit)
    app.add_middleware(AuthGate)
    if allowed_hosts is not None:  # added last, so it runs first: before the gate
        app.add_middleware(AllowedHosts, hosts=allowed_hosts)
    return app
