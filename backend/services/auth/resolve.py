"""Who is asking: one resolver for the API and the pages, and sign-in.

A request may carry, in this order of precedence:

1. a bearer API token (any AUTH mode): its scopes apply, no CSRF token is needed since a
   browser never sends one by itself;
2. with `AUTH=proxy`, the proxy's user header, believed only from a peer in
   TRUSTED_PROXIES: the named user (created with PROXY_DEFAULT_ROLE on first sight)
   gets a server-side session on a page load or a change, so a proxied browser is
   handled like a signed-in one (an API read through the proxy needs no session, so a
   script without a cookie jar does not leave one per request);
3. with `AUTH=password` or `proxy`, the session cookie set at sign-in.

Sessions (2 and 3) come with a CSRF token that state-changing requests must echo in
`X-CSRFToken` (`csrf_matches`). With `AUTH=off` cookies and the proxy header are ignored.

Public surface: `Credentials`, `Identity`, `Resolution`, `resolve_credentials`, `csrf_matches`,
`sign_in`, `client_address`, `is_trusted_proxy`, `STATE_CHANGING`.
"""

import hmac
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

from sqlmodel import Session

from backend.core.config import Settings
from backend.models.users import Role, User
from backend.services.auth.rate_limit import login_buckets
from backend.services.auth.sessions import NewSession, create_session, find_session, revoke_session
from backend.services.auth.tokens import check_rate, find_token
from backend.services.auth.users import check_login, proxy_user
from backend.services.errors import ForbiddenError, NotAuthenticatedError, TooManyRequestsError

STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})


@dataclass(frozen=True)
class Credentials:
    """What a request presents, taken from its headers and connection."""

    bearer: str | None = None
    session_id: str | None = None
    proxy_user: str | None = None  # the PROXY_USER_HEADER value, whoever sent it
    peer: str | None = None  # the TCP peer's address
    forwarded_for: str | None = None  # X-Forwarded-For (all of its lines), whoever sent it
    needs_session: bool = True  # False for an API read: a proxy sign-in then keeps none

    @property
    def empty(self) -> bool:
        return not (self.bearer or self.session_id or self.proxy_user)


@dataclass(frozen=True)
class Identity:
    """A resolved caller: a user (with a role and a session's CSRF token) or an API token."""

    name: str  # the username, or the token's name and prefix
    role: Role | None = None  # None for API tokens
    scopes: tuple[str, ...] = ()
    csrf_token: str | None = None  # set for session users: state changes must echo it

    @property
    def is_user(self) -> bool:
        return self.role is not None

    @property
    def label(self) -> str:
        """How messages name the caller."""
        return f"{'user' if self.is_user else 'token'} {self.name!r}"


@dataclass(frozen=True)
class Resolution:
    identity: Identity | None = None
    new_session: NewSession | None = None  # a proxy sign-in: the cookies to hand out


Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Networks = Sequence[ipaddress.IPv4Network | ipaddress.IPv6Network]
IPV6_CLIENT_PREFIX = 64  # one IPv6 client (a host, a home) usually holds a whole /64


def _address(text: str | None) -> Address | None:
    """`text` as an address (an IPv4-mapped IPv6 one as IPv4, a port dropped), or None if
    it is not one."""
    text = (text or "").strip()
    if text.startswith("["):  # [2001:db8::1]:443
        text = text[1:].partition("]")[0]
    elif text.count(":") == 1:  # 198.51.100.1:443
        text = text.partition(":")[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        return address.ipv4_mapped
    return address


def _listed(address: Address | None, networks: Networks) -> bool:
    return address is not None and any(address in net for net in networks)


def is_trusted_proxy(peer: str | None, settings: Settings) -> bool:
    """Whether `peer` may name the user in PROXY_USER_HEADER (TRUSTED_PROXIES, by default
    loopback; an IPv4-mapped IPv6 peer counts as IPv4)."""
    return _listed(_address(peer), settings.proxy_header_peers)


def client_address(creds: Credentials, settings: Settings) -> str:
    """The client address the sign-in throttle counts, IPv6 by its /64.

    X-Forwarded-For is believed only from a peer listed in TRUSTED_PROXIES (never by
    default: a client on loopback could name any address, and start a fresh count with
    each). Its hops are read from the right, each added by the proxy the request passed
    before: listed proxies are skipped, and the first other hop is the client. A hop
    that is not an address stops the walk at the last one believed.

    >>> from backend.core.config import Settings
    >>> s = Settings(trusted_proxies=["10.0.0.0/24"])
    >>> [client_address(Credentials(peer=p, forwarded_for=f), s) for p, f in [
    ...     ("10.0.0.2", "spoofed, 198.51.100.1, 10.0.0.3"), ("203.0.113.9", "198.51.100.1"),
    ...     ("10.0.0.2", "junk"), ("2001:db8:0:1::5", None)]]
    ['198.51.100.1', '203.0.113.9', '10.0.0.2', '2001:db8:0:1::/64']
    """
    client = _address(creds.peer)
    if client is None:
        return creds.peer or ""
    proxies = settings.forwarded_for_peers
    hops = (creds.forwarded_for or "").split(",") if _listed(client, proxies) else []
    for hop in reversed(hops):
        address = _address(hop)
        if address is None:
            break
        client = address
        if not _listed(address, proxies):
            break
    if isinstance(client, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((client, IPV6_CLIENT_PREFIX), strict=False))
    return str(client)


def _user(user: User, csrf_token: str) -> Identity:
    return Identity(name=user.username, role=Role(user.role), csrf_token=csrf_token)


def _proxy_name(creds: Credentials, settings: Settings) -> str | None:
    if settings.auth != "proxy" or not creds.proxy_user:
        return None
    if not is_trusted_proxy(creds.peer, settings):
        return None
    return creds.proxy_user.strip() or None


def resolve_credentials(db: Session, creds: Credentials, settings: Settings) -> Resolution:
    """Who `creds` belong to; an empty Resolution means anonymous.

    Raises:
        ForbiddenError: an unknown or revoked token, or a disabled user named by the proxy.
        TooManyRequestsError: the token is over its rate limit.
    """
    if creds.bearer is not None:
        token = find_token(db, creds.bearer)
        if token is None:
            raise ForbiddenError("the token is unknown or revoked")
        check_rate(token)
        name = f"{token.name} ({token.prefix}...)"
        return Resolution(Identity(name=name, scopes=tuple(token.scopes)))
    if settings.auth == "off":
        return Resolution()
    found = find_session(db, creds.session_id) if creds.session_id else None
    named = _proxy_name(creds, settings)
    if named is not None and (found is None or found[1].username != named):
        user = proxy_user(db, named, Role(settings.proxy_default_role))
        if user.disabled:
            raise ForbiddenError(f"user {named!r} is disabled")
        if not creds.needs_session:
            return Resolution(Identity(name=user.username, role=Role(user.role)))
        new = create_session(db, user, settings.session_ttl_s)
        return Resolution(_user(user, new.csrf_token), new_session=new)
    if found is None:
        return Resolution()
    login, user = found
    return Resolution(_user(user, login.csrf_token))


def csrf_matches(identity: Identity | None, sent: str | None) -> bool:
    """Whether a state-changing request may go ahead: token callers and anonymous ones
    need nothing; a session user must send the session's CSRF token."""
    if identity is None or identity.csrf_token is None:
        return True
    return sent is not None and hmac.compare_digest(identity.csrf_token, sent)


def sign_in(
    db: Session, creds: Credentials, username: str, password: str, settings: Settings
) -> NewSession:
    """Check a password login (throttled per client address and per username) and start a
    session, ending the one the browser had.

    Raises:
        TooManyRequestsError: too many recent failures for this address or username.
        NotAuthenticatedError: wrong username or password, or a disabled user.
    """
    buckets = login_buckets()
    keys = [f"peer:{client_address(creds, settings)}", f"user:{username}"]
    taken: list[str] = []
    for key in keys:  # the address first, so one client cannot fill memory with names
        wait_s = buckets.take(key)
        if wait_s > 0:
            for done in taken:
                buckets.refund(done)
            raise TooManyRequestsError(
                f"too many failed sign-ins; try again in {wait_s:.0f} s", wait_s
            )
        taken.append(key)
    user = check_login(db, username, password)
    if user is None:
        raise NotAuthenticatedError("wrong username or password")
    for key in keys:
        buckets.refund(key)
    if creds.session_id:
        revoke_session(db, creds.session_id)
    return create_session(db, user, settings.session_ttl_s)
