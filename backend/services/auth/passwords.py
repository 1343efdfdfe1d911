"""Password hashing with scrypt (hashlib), its parameters kept in the stored string.

The stored form is `scrypt$N$r$p$salt$hash` (salt and hash in unpadded base64), so a
hash made under an older `SCRYPT_N` still verifies after the setting changes. The
default N=2**17, r=8, p=1 is OWASP's minimum for scrypt; one hash then takes 128 MiB and
about a fifth of a second of one core, so at most `KDF_SLOTS` run at once: a burst of
login attempts queues instead of taking the server's memory.

Public surface: `hash_password`, `verify_password`, `needs_rehash`, `burn_time`.
"""

import base64
import hashlib
import hmac
import secrets
import threading

from backend.core.config import get_settings

R, P = 8, 1
SALT_BYTES, HASH_BYTES = 16, 32
KDF_SLOTS = 2
# A stored hash is trusted input, but never let one ask for more than 1 GiB.
_MAX_N = 2**20
_slots = threading.BoundedSemaphore(KDF_SLOTS)


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)


def _scrypt(password: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    # OpenSSL needs 128*r*(N+p+2) bytes; hashlib's default cap (32 MiB) is below N=2**17.
    maxmem = 128 * r * (n + p + 2) + 2**20
    with _slots:
        return hashlib.scrypt(
            password.encode(), salt=salt, n=n, r=r, p=p, maxmem=maxmem, dklen=HASH_BYTES
        )


def hash_password(password: str, n: int | None = None) -> str:
    """A fresh salted hash of `password` with cost `n` (default: the SCRYPT_N setting).

    >>> stored = hash_password("s3cret", n=16)
    >>> stored.split("$")[:4], verify_password("s3cret", stored), verify_password("x", stored)
    (['scrypt', '16', '8', '1'], True, False)
    """
    n = n or get_settings().scrypt_n
    salt = secrets.token_bytes(SALT_BYTES)
    digest = _scrypt(password, salt, n, R, P)
    return f"scrypt${n}${R}${P}${_b64(salt)}${_b64(digest)}"


def _parse(stored: str) -> tuple[int, int, int, bytes, bytes] | None:
    parts = stored.split("$")
    if len(parts) != 6 or parts[0] != "scrypt":
        return None
    try:
        n, r, p = int(parts[1]), int(parts[2]), int(parts[3])
        salt, digest = _unb64(parts[4]), _unb64(parts[5])
    except ValueError:
        return None
    if not (1 < n <= _MAX_N and n & (n - 1) == 0 and 0 < r <= 32 and 0 < p <= 16):
        return None
    return n, r, p, salt, digest


def verify_password(password: str, stored: str) -> bool:
    """Whether `password` hashes to `stored`; constant-time compare, False if malformed."""
    parsed = _parse(stored)
    if parsed is None:
        return False
    n, r, p, salt, digest = parsed
    return hmac.compare_digest(_scrypt(password, salt, n, r, p), digest)


def needs_rehash(stored: str) -> bool:
    """Whether `stored` was made with other parameters than the current settings."""
    parsed = _parse(stored)
    return parsed is None or parsed[:3] != (get_settings().scrypt_n, R, P)


def burn_time(password: str) -> None:
    """Spend what a verification costs, so an unknown user answers as slowly as a known one."""
    _scrypt(password, b"\0" * SALT_BYTES, get_settings().scrypt_n, R, P)
