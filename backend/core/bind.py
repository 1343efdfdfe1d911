"""Refuse to serve anonymous perfdash beyond loopback unless the operator says so.

With `AUTH=off` anyone who reaches the port can upload and delete traces, so `perfdash
serve --host 0.0.0.0` must be a decision, not an accident: it needs `AUTH=password` (people
log in), `AUTH=proxy` (a reverse proxy authenticates) or `ALLOW_ANONYMOUS=true`, which is
logged as a warning.

Public surface: `check_bind`, `UnsafeBindError`.
"""

import ipaddress
import logging

from backend.core.config import Settings

log = logging.getLogger(__name__)


class UnsafeBindError(RuntimeError):
    """`serve` was asked to listen beyond loopback with authentication off."""


def is_loopback(host: str) -> bool:
    """Whether `host` only accepts connections from this machine.

    >>> [is_loopback(h) for h in ("127.0.0.1", "localhost", "::1", "0.0.0.0", "10.0.0.5")]
    [True, True, True, False, False]
    """
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve to anything


def check_bind(host: str, settings: Settings) -> None:
    """Allow binding `host`, or raise.

    Raises:
        UnsafeBindError: `host` is not loopback, `AUTH` is off and anonymous access was not
            explicitly allowed.
    """
    if is_loopback(host) or settings.auth != "off":
        return
    if settings.allow_anonymous:
        log.warning(
            "serving on %s with authentication off (PERFDASH_ALLOW_ANONYMOUS=true): anyone "
            "who can reach this port can upload, read and delete traces",
            host,
        )
        return
    raise UnsafeBindError(
        f"refusing to serve on {host!r} with authentication off: anyone who can reach it "
        "could upload, read and delete traces. Set PERFDASH_AUTH=password (and add users with "
        "`perfdash user add`), or put perfdash behind an authenticating reverse proxy and set "
        "PERFDASH_AUTH=proxy, or set PERFDASH_ALLOW_ANONYMOUS=true to accept this, or use "
        "--host 127.0.0.1"
    )
