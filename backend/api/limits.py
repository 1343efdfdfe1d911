"""Request body limits on every path, as a pure ASGI middleware.

FastAPI reads a JSON body whole into memory before validating it, so a 2 GB body to
`/api/v1/metrics` would be held in RAM; Dash reads a callback's body whole too (a 1 GiB
POST to `/_dash-update-component` grew the process by 3 GB); and FastAPI spools a
multipart body to a temporary file before the route runs, so an endless upload would fill
the disk before the route's own size check. This refuses any of them with 413 as soon as
the declared `Content-Length`, or the bytes actually received, pass the limit:
`MAX_UPLOAD_BYTES` plus room for the multipart framing for a multipart body under `/api/`
(a trace upload; the route then checks the file sizes), `MAX_JSON_BYTES` for every other
body, the pages' included. The pages take no uploads: the browser sends files to the API.
"""

import contextlib

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from backend.core.config import get_settings

_UPLOAD_PREFIX = "/api/"
MULTIPART_FRAMING_BYTES = 4 * 1024 * 1024  # part headers and form fields around the files


class _BodyTooLarge(Exception):
    pass


class BodySizeLimit:
    """Answer 413 to a request whose body exceeds its kind's limit."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        settings = get_settings()
        if is_multipart(scope) and scope["path"].startswith(_UPLOAD_PREFIX):
            limit, setting = settings.max_upload_bytes + MULTIPART_FRAMING_BYTES, "MAX_UPLOAD_BYTES"
        else:
            limit, setting = settings.max_json_bytes, "MAX_JSON_BYTES"
        declared = headers.get(b"content-length", b"")
        if declared.isdigit() and int(declared) > limit:
            await _reject(scope, receive, send, limit, setting)
            return
        await self._guarded(scope, receive, send, limit, setting)

    async def _guarded(
        self, scope: Scope, receive: Receive, send: Send, limit: int, setting: str
    ) -> None:
        """Count the bytes of a chunked (or lying) body as they arrive.

        FastAPI turns an error while reading the body into its own 400, so once the limit
        is passed the app's answer is dropped and the 413 is sent instead.
        """
        received = 0
        too_large = started = False

        async def counting_receive() -> Message:
            nonlocal received, too_large
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    too_large = True
                    raise _BodyTooLarge
            return message

        async def watching_send(message: Message) -> None:
            nonlocal started
            if too_large and not started:
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        with contextlib.suppress(_BodyTooLarge):  # FastAPI may also have answered 400
            await self.app(scope, counting_receive, watching_send)
        if too_large and not started:
            await _reject(scope, receive, send, limit, setting)


def is_multipart(scope: Scope) -> bool:
    """Whether the request carries a multipart form (a trace upload)."""
    content_type: bytes = dict(scope["headers"]).get(b"content-type", b"")
    return content_type.startswith(b"multipart/form-data")


async def _reject(scope: Scope, receive: Receive, send: Send, limit: int, setting: str) -> None:
    detail = f"the request body is larger than the {limit}-byte limit ({setting})"
    await JSONResponse({"detail": detail}, 413)(scope, receive, send)
