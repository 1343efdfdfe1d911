"""A local HTTP receiver for the webhook tests (metrics documents are built by
`tests.factories.native`)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import HTTPServer
from typing import TypeVar

_Server = TypeVar("_Server", bound=HTTPServer)


@contextmanager
def serving(server: _Server) -> Iterator[_Server]:
    """Run a local HTTP receiver (bound to 127.0.0.1) in a thread while the block runs."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
