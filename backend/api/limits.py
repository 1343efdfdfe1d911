"""Request body limit for the JSON endpoints under `/api/`, as a pure ASGI middleware.

FastAPI reads a JSON body whole into memory before validating it, so a 2 GB body to
`/api/v1/metrics` would be held in RAM. This refuses it with 413 as soon as the declared
`Content-Length`, or the bytes actually received, pass `MAX_JSON_BYTES`. Multipart uploads
are exempt: the trace upload streams to the blob store under its own `MAX_UPLOAD_BYTES`.
"""

import contextlib
import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from backend.core.config import get_settings

_PREFIX = "/api/"


class _BodyTooLarge(Exception):
    pass


class BodySizeLimit:
    """Answer 413 to an `/api/` request whose non-multipart body exceeds MAX_JSON_BYTES."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(_PREFIX):
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        if headers.get(b"content-type", b"").startswith(b"multipart/form-data"):
            await self.app(scope, receive, send)
            return
        limit = get_settings().max_json_bytes
        declared = headers.get(b"content-length", b"")
        if declared.isdigit() and int(declared) > limit:
            await _reject(send, limit)
            return
        await self._guarded(scope, receive, send, limit)

    async def _guarded(self, scope: Scope, receive: Receive, send: Send, limit: int) -> None:
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
            await _reject(send, limit)


async def _reject(send: Send, limit: int) -> None:
    body = json.dumps(
        {"detail": f"the request body is larger than the {limit}-byte limit (MAX_JSON_BYTES)"}
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
