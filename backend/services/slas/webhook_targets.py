"""Where a webhook may send: public addresses only, unless on-premise receivers are allowed.

A webhook URL is chosen by whoever may change webhooks, and the worker that sends it sits
inside the deployment: without a check it would POST to loopback services, the private
network or the cloud metadata service (169.254.169.254). The URL is checked when the
webhook is created, and its host is resolved and checked again at every send
(`resolve_target`); the sender then connects to the address it checked, never to a second
resolution of the name, so a DNS answer that changes in between (rebinding) cannot
redirect it. `WEBHOOK_ALLOW_PRIVATE` allows loopback and private addresses; link-local
ones, multicast and reserved ranges are always refused.

Public surface: `Target`, `TargetRefused`, `resolve_target`, `check_url`, `refusal`,
`redact_url`.
"""

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from backend.services.errors import InvalidInputError

_IP = ipaddress.IPv4Address | ipaddress.IPv6Address
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_ALLOW_HINT = "set PERFDASH_WEBHOOK_ALLOW_PRIVATE=true for on-premise receivers"


class TargetRefused(InvalidInputError):
    """The webhook's URL is malformed or its host is (or resolves to) a refused address."""


@dataclass(frozen=True)
class Target:
    """A checked webhook target: connect to `address`, and speak to `host`."""

    scheme: str
    host: str
    port: int
    path: str
    address: str


def _embedded_v4(ip: _IP) -> _IP:
    """The IPv4 address an IPv6 one carries (mapped, 6to4, NAT64), which is where it goes."""
    if isinstance(ip, ipaddress.IPv4Address):
        return ip
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip


def refusal(address: str, *, allow_private: bool) -> str | None:
    """Why a webhook may not connect to `address`, or None if it may.

    >>> refusal("169.254.169.254", allow_private=True)
    'a link-local address (the cloud metadata service lives there)'
    >>> refusal("127.0.0.1", allow_private=True) is None
    True
    >>> refusal("8.8.8.8", allow_private=False) is None
    True
    """
    ip = _embedded_v4(ipaddress.ip_address(address.split("%", 1)[0]))
    if ip.is_link_local:
        return "a link-local address (the cloud metadata service lives there)"
    if ip.is_loopback:
        return None if allow_private else f"a loopback address; {_ALLOW_HINT}"
    if ip.is_unspecified or ip.is_multicast or ip.is_reserved:
        return "not a unicast address"
    if ip.is_global or allow_private:
        return None
    return f"a private or non-public address; {_ALLOW_HINT}"


def _split(url: str) -> tuple[str, str, int, str]:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as e:
        raise TargetRefused(f"webhook url {url!r} is malformed: {e}") from e
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise TargetRefused(f"webhook url must be http:// or https:// with a host, got {url!r}")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return parts.scheme, parts.hostname, port or (443 if parts.scheme == "https" else 80), path


def resolve_target(url: str, *, allow_private: bool) -> Target:
    """Resolve the URL's host now and check every address it resolves to.

    Raises:
        TargetRefused: the URL is malformed, or an address it resolves to is refused.
        OSError: the host does not resolve (`socket.gaierror`): maybe a passing DNS fault.
    """
    scheme, host, port, path = _split(url)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except UnicodeError as e:  # IDNA: an empty or over-long label
        raise TargetRefused(f"webhook url {url!r}: the host name is not valid: {e}") from e
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    for address in addresses:
        why = refusal(address, allow_private=allow_private)
        if why is not None:
            shown = f"{host} is" if host == address else f"{host} resolves to {address}, which is"
            raise TargetRefused(f"webhook target refused: {shown} {why}")
    return Target(scheme=scheme, host=host, port=port, path=path, address=addresses[0])


def check_url(url: str, *, allow_private: bool) -> None:
    """Check a webhook URL when it is registered (it is checked again at every send).

    Raises:
        TargetRefused: malformed, refused, or its host does not resolve.
    """
    try:
        resolve_target(url, allow_private=allow_private)
    except OSError as e:
        raise TargetRefused(f"webhook url {url!r}: its host does not resolve: {e}") from e


def redact_url(url: str) -> str:
    """The URL with everything after the host hidden (Slack's token is in the path).

    >>> redact_url("https://hooks.slack.com/services/T0/B0/secret")
    'https://hooks.slack.com/...'
    >>> redact_url("https://user:pw@example.org:8443/x?token=1")
    'https://example.org:8443/...'
    """
    try:
        parts = urlsplit(url)
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(redacted)"
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{host}{port}/..."
