"""Map service errors to HTTP responses, so routes never build error bodies themselves."""

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

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


def install_error_handlers(app: FastAPI) -> None:
    """Register one handler for the whole ServiceError family."""

    async def handle(_request: Request, exc: Exception) -> JSONResponse:
        status = next((s for t, s in _STATUS.items() if isinstance(exc, t)), 400)
        return JSONResponse(status_code=status, content={"detail": str(exc)})

    app.add_exception_handler(ServiceError, handle)
