"""scrypt password hashes: round trip, salt, stored parameters, malformed input, cost."""

from __future__ import annotations

import base64
import hashlib

import pytest

from backend.core.config import Settings, get_settings
from backend.services.auth.passwords import hash_password, needs_rehash, verify_password


def test_round_trip_and_wrong_password() -> None:
    stored = hash_password("correct horse", n=1024)
    assert verify_password("correct horse", stored)
    assert not verify_password("correct horsf", stored)
    assert not verify_password("", stored)


def test_each_hash_has_its_own_salt_and_states_its_parameters() -> None:
    first, second = hash_password("same", n=1024), hash_password("same", n=1024)
    assert first != second
    kind, n, r, p, salt, digest = first.split("$")
    assert (kind, n, r, p) == ("scrypt", "1024", "8", "1")
    raw_salt = base64.b64decode(salt + "=" * (-len(salt) % 4))
    raw = base64.b64decode(digest + "=" * (-len(digest) % 4))
    assert len(raw_salt) == 16
    # An independent computation of the same KDF gives the stored digest.
    assert raw == hashlib.scrypt(b"same", salt=raw_salt, n=1024, r=8, p=1, dklen=32)
    assert "same" not in first


@pytest.mark.parametrize(
    "stored",
    ["", "plain", "scrypt$1024$8$1$$", "scrypt$1000$8$1$AAAA$AAAA", "bcrypt$1024$8$1$AAAA$AAAA",
     "scrypt$4194304$8$1$AAAA$AAAA", "scrypt$1024$8$1$not base64!$AAAA"],
)  # fmt: skip
def test_malformed_or_foreign_hashes_never_verify(stored: str) -> None:
    assert verify_password("anything", stored) is False


def test_a_hash_made_under_another_cost_still_verifies_and_asks_for_rehash(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PERFDASH_SCRYPT_N", "2048")
    get_settings.cache_clear()
    try:
        old = hash_password("pw-12345", n=1024)
        assert verify_password("pw-12345", old)
        assert needs_rehash(old)
        assert not needs_rehash(hash_password("pw-12345"))
    finally:
        get_settings.cache_clear()


def test_default_cost_is_owasps_scrypt_minimum() -> None:
    assert Settings().scrypt_n == 2**17
    stored = hash_password("at full cost", n=Settings().scrypt_n)  # 128 MiB, well over 32
    assert stored.startswith("scrypt$131072$8$1$") and verify_password("at full cost", stored)


def test_scrypt_n_must_be_a_power_of_two() -> None:
    with pytest.raises(ValueError, match="power of two"):
        Settings(scrypt_n=100_000)
