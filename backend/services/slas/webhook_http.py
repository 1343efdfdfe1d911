"""One webhook POST to a checked address, under a total deadline.

A per-read timeout does not bound a receiver that sends one byte every few seconds: each
read succeeds. So the whole exchange (TLS handshake, request, status line and headers)
runs under one deadline, enforced by a timer that shuts the socket down when it passes;
any blocked read or write then returns at once. The connection goes to
`Target.address`, the address `webhook_targets` checked, while the `Host` header and
TLS (SNI and certificate) use the URL's host name. The response body is never read.

Public surface: `post`, `DeadlineExceeded`.
"""

import contextlib
import http.client
import socket
import ssl
import threading
import time

from backend.services.slas.webhook_targets import Target


class DeadlineExceeded(TimeoutError):
    """The receiver had not answered (status and headers) when the deadline passed."""


class _Pinned(http.client.HTTPConnection):
    """HTTP over a socket already connected to the checked address."""

    def __init__(self, target: Target, raw: socket.socket, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout)
        self._raw = raw

    def connect(self) -> None:
        self.sock = self._raw


class _PinnedTLS(http.client.HTTPSConnection):
    """HTTPS over a socket already connected to the checked address; the certificate is
    verified against the URL's host name."""

    def __init__(self, target: Target, raw: socket.socket, timeout: float) -> None:
        self._tls = ssl.create_default_context()
        super().__init__(target.host, target.port, timeout=timeout, context=self._tls)
        self._raw = raw

    def connect(self) -> None:
        self.sock = self._tls.wrap_socket(self._raw, server_hostname=self.host)


def post(target: Target, body: bytes, headers: dict[str, str], *, deadline_s: float) -> int:
    """POST `body` to the target and return the response's status code.

    Args:
        target: the checked target (`webhook_targets.resolve_target`).
        body: the request body.
        headers: request headers; `Host` and `Content-Length` are added.
        deadline_s: the total time the exchange may take.

    Raises:
        DeadlineExceeded: the deadline passed first.
        OSError, http.client.HTTPException: the connection failed or the answer is not HTTP.
    """
    deadline = time.monotonic() + deadline_s
    raw = socket.create_connection((target.address, target.port), timeout=deadline_s)
    cut = threading.Event()

    def _cut() -> None:
        cut.set()
        with contextlib.suppress(OSError):
            raw.shutdown(socket.SHUT_RDWR)

    timer = threading.Timer(max(0.0, deadline - time.monotonic()), _cut)
    timer.daemon = True
    timer.start()
    kind = _PinnedTLS if target.scheme == "https" else _Pinned
    conn = kind(target, raw, deadline_s)
    try:
        conn.request("POST", target.path, body=body, headers=headers)
        return conn.getresponse().status
    except (OSError, http.client.HTTPException) as e:
        if cut.is_set():
            raise DeadlineExceeded(f"no answer within the {deadline_s:g} s deadline") from e
        raise
    finally:
        timer.cancel()
        conn.close()
        raw.close()
