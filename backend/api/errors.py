"""Map service errors to HTTP responses, so routes never build error bodies themselves."""

import logging
import math

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DataError, InterfaceError, OperationalError

from backend.services.errors import (
    ForbiddenError,
    InvalidInputError,
    NotAuthenticatedError,
    NotFoundError,
    ServiceError,
    StorageFullError,
    TooLargeError,
    TooManyRequestsError,
)

_STATUS: dict[type[ServiceError], int] = {
    NotAuthenticatedError: 401,
    ForbiddenError: 403,
    NotFoundError: 404,
    TooLargeError: 413,
    InvalidInputError: 422,
    StorageFullError: 507,
    TooManyRequestsError: 429,
}
log = logging.getLogger(__name__)
# Seconds a client should wait after a 503 for an unreachable database: a restart or a
# failover takes a few seconds, and the engine's pre-ping reconnects on the next request.
DATABASE_RETRY_AFTER_S = 2


def headers(exc: Exception) -> dict[str, str]:
    """The headers HTTP asks for with some errors: how to authenticate, when to retry."""
    if isinstance(exc, NotAuthenticatedError):
        return {"WWW-Authenticate": "Bearer"}
    if isinstance(exc, TooManyRequestsError):
        return {"Retry-After": str(max(1, math.ceil(exc.retry_after_s)))}
    return {}


def status_of(exc: ServiceError) -> int:
    """The HTTP status of a service error."""
    return next((s for t, s in _STATUS.items() if isinstance(exc, t)), 400)


DATABASE_UNAVAILABLE = (OperationalError, InterfaceError)


def database_unavailable_response(method: str, path: str, exc: Exception) -> JSONResponse:
    """503 with Retry-After for a database that is restarting or unreachable.

    The work was rolled back (or, if the drop hit a commit, may have landed): writes are
    idempotent (metric pushes by run key), so the client sends the same request again.
    Shared by the route handlers and the auth gate, which reads tokens and sessions first.
    """
    reason = (str(getattr(exc, "orig", exc)).strip().splitlines() or [""])[0][:200]
    log.warning("database unavailable in %s %s: %s", method, path, reason)
    return JSONResponse(
        status_code=503,
        content={"detail": "the database is unavailable; retry the request"},
        headers={"Retry-After": str(DATABASE_RETRY_AFTER_S)},
    )


def install_error_handlers(app: FastAPI) -> None:
    """Register one handler for the whole ServiceError family."""

    async def handle(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ServiceError)
        return JSONResponse(
            status_code=status_of(exc), content={"detail": str(exc)}, headers=headers(exc)
        )

    app.add_exception_handler(ServiceError, handle)

    async def out_of_range(request: Request, exc: Exception) -> JSONResponse:
        # A number the schema allows but the database cannot hold (offset=2**63 on SQLite,
        # found by schemathesis) is bad input, not a server fault; routes should bound it.
        log.warning("out-of-range value in %s %s: %s", request.method, request.url.path, exc)
        detail = "a value in the request is out of the range the database can store"
        return JSONResponse(status_code=422, content={"detail": detail})

    app.add_exception_handler(OverflowError, out_of_range)
    app.add_exception_handler(DataError, out_of_range)

    async def database_unavailable(request: Request, exc: Exception) -> JSONResponse:
        return database_unavailable_response(request.method, request.url.path, exc)

    for kind in DATABASE_UNAVAILABLE:
        app.add_exception_handler(kind, database_unavailable)
