"""Map service errors to HTTP responses, so routes never build error bodies themselves."""

import logging

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DataError

from backend.services.errors import (
    InvalidInputError,
    NotFoundError,
    ServiceError,
    StorageFullError,
    TooLargeError,
)

_STATUS: dict[type[ServiceError], int] = {
    NotFoundError: 404,
    TooLargeError: 413,
    InvalidInputError: 422,
    StorageFullError: 507,
}
log = logging.getLogger(__name__)


def install_error_handlers(app: FastAPI) -> None:
    """Register one handler for the whole ServiceError family."""

    async def handle(_request: Request, exc: Exception) -> JSONResponse:
        status = next((s for t, s in _STATUS.items() if isinstance(exc, t)), 400)
        return JSONResponse(status_code=status, content={"detail": str(exc)})

    app.add_exception_handler(ServiceError, handle)

    async def out_of_range(request: Request, exc: Exception) -> JSONResponse:
        # A number the schema allows but the database cannot hold (offset=2**63 on SQLite,
        # found by schemathesis) is bad input, not a server fault; routes should bound it.
        log.warning("out-of-range value in %s %s: %s", request.method, request.url.path, exc)
        detail = "a value in the request is out of the range the database can store"
        return JSONResponse(status_code=422, content={"detail": detail})

    app.add_exception_handler(OverflowError, out_of_range)
    app.add_exception_handler(DataError, out_of_range)
