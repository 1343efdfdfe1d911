"""The address the sign-in throttle counts: a client cannot choose it with X-Forwarded-For.

The probe reset its per-address count from loopback by sending a new X-Forwarded-For with
each guess: loopback was a trusted proxy by default. Now the header is believed only from
proxies listed in TRUSTED_PROXIES, and read from the right past the listed ones.
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from backend.core.config import Settings
from backend.services.auth.rate_limit import LOGIN_BURST
from backend.services.auth.resolve import Credentials, client_address
from tests.auth.conftest import MakeClient, sign_in

CHAIN = '["10.0.0.0/24"]'  # an edge proxy and an inner one, both listed


@pytest.mark.parametrize(
    ("trusted", "peer", "forwarded", "counted"),
    [
        # unset TRUSTED_PROXIES: the header is nobody's word, loopback included
        (None, "127.0.0.1", "198.51.100.1", "127.0.0.1"),
        (None, "::1", "198.51.100.1", "::/64"),
        # listed, explicitly: the right-most hop the listed proxy added
        ('["127.0.0.1/32"]', "127.0.0.1", "198.51.100.1", "198.51.100.1"),
        ('["10.0.0.2/32"]', "10.0.0.2", "chosen-by-client, 198.51.100.1", "198.51.100.1"),
        ('["10.0.0.2/32"]', "10.0.0.2", "198.51.100.7, 198.51.100.1", "198.51.100.1"),
        ('["10.0.0.2/32"]', "203.0.113.9", "198.51.100.1", "203.0.113.9"),  # not listed
        # a chain of listed proxies is walked past, right to left
        (CHAIN, "10.0.0.2", "198.51.100.7, 198.51.100.1, 10.0.0.3", "198.51.100.1"),
        (CHAIN, "10.0.0.2", "10.0.0.4, 10.0.0.3", "10.0.0.4"),
        # a hop that is not an address: the last believed one counts
        ('["10.0.0.2/32"]', "10.0.0.2", "not-an-address", "10.0.0.2"),
        (CHAIN, "10.0.0.2", "198.51.100.1, junk, 10.0.0.3", "10.0.0.3"),
        # ports, brackets and IPv4-mapped IPv6 are the same address
        ('["10.0.0.2/32"]', "::ffff:10.0.0.2", "198.51.100.1:5123", "198.51.100.1"),
        ('["10.0.0.2/32"]', "10.0.0.2", "[2001:db8:0:1::9]:443", "2001:db8:0:1::/64"),
        # IPv6 by its /64, which one client usually holds whole
        (None, "2001:db8:0:1::1", None, "2001:db8:0:1::/64"),
    ],
)
def test_the_counted_address(
    monkeypatch: pytest.MonkeyPatch,
    trusted: str | None,
    peer: str,
    forwarded: str | None,
    counted: str,
) -> None:
    if trusted is not None:
        monkeypatch.setenv("PERFDASH_TRUSTED_PROXIES", trusted)
    else:
        monkeypatch.delenv("PERFDASH_TRUSTED_PROXIES", raising=False)
    creds = Credentials(peer=peer, forwarded_for=forwarded)
    assert client_address(creds, Settings()) == counted


def _guesses(client: TestClient, count: int, forwarded: list[str] | None = None) -> None:
    for i in range(count):
        if forwarded is not None:
            client.headers["X-Forwarded-For"] = forwarded[i % len(forwarded)]
        assert sign_in(client, f"guess-{i}", "guess").status_code == 401


def test_a_loopback_client_cannot_reset_its_count_with_x_forwarded_for(
    make_client: MakeClient, users: dict[str, str]
) -> None:
    client = make_client("password")  # on 127.0.0.1, TRUSTED_PROXIES unset
    _guesses(client, LOGIN_BURST, [f"198.51.100.{i}" for i in range(1, 200)])
    client.headers["X-Forwarded-For"] = "203.0.113.250"
    assert sign_in(client, "viewer").status_code == 429


def test_behind_a_listed_proxy_each_client_counts_alone(
    make_client: MakeClient, users: dict[str, str]
) -> None:
    proxy = make_client("password", peer="10.0.0.2", trusted_proxies=CHAIN)
    _guesses(proxy, LOGIN_BURST, ["198.51.100.1, 10.0.0.3"])
    proxy.headers["X-Forwarded-For"] = "chosen, 198.51.100.1, 10.0.0.3"
    assert sign_in(proxy, "viewer").status_code == 429
    proxy.headers["X-Forwarded-For"] = "198.51.100.1, 198.51.100.2, 10.0.0.3"
    assert sign_in(proxy, "viewer").status_code == 303  # another client, same proxies


def test_an_ipv6_client_cannot_escape_its_count_within_its_64(
    make_client: MakeClient, users: dict[str, str]
) -> None:
    _guesses(make_client("password", peer="2001:db8:0:1::1"), LOGIN_BURST)
    assert sign_in(make_client("password", peer="2001:db8:0:1::2"), "viewer").status_code == 429
    assert sign_in(make_client("password", peer="2001:db8:0:2::1"), "viewer").status_code == 303
