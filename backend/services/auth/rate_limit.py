"""Request rate limits as in-process token buckets: per API token, and for failed logins.

Each API token gets a bucket of `burst` requests refilled at `rate_per_s`. Logins spend
from one bucket per username and one per client address before the password is checked
(so parallel guesses count too), and a successful login gives its attempt back. The buckets
live in this process's memory, which is exact for the embedded `perfdash serve` (one API
process). With N API processes or hosts behind a load balancer each keeps its own buckets,
so a token may send up to N times the rate; a shared limiter (Redis) would be the fix.

Public surface: `TokenBuckets`, `token_buckets`, `login_buckets`.
"""

import threading
import time
from functools import lru_cache

from backend.core.config import get_settings

# Ten wrong passwords in a row, then one more try every 30 s, per username and per address.
LOGIN_BURST, LOGIN_REFILL_PER_S = 10, 1 / 30


class TokenBuckets:
    """Thread-safe buckets keyed by the token's stored hash (unique, never reused)."""

    # Login keys are chosen by whoever posts the form, so idle buckets are dropped past this.
    MAX_KEYS = 100_000

    def __init__(self, *, rate_per_s: float, burst: int) -> None:
        self.rate, self.burst = rate_per_s, burst
        self._state: dict[str, tuple[float, float]] = {}  # key -> (tokens, at)
        self._lock = threading.Lock()

    def _prune(self, now: float) -> None:
        """Forget buckets that have refilled: they behave as new ones would."""
        full_after = self.burst / self.rate
        self._state = {k: v for k, v in self._state.items() if now - v[1] < full_after}

    def take(self, key: str, now: float | None = None) -> float:
        """Spend one request of `key`'s bucket.

        Returns:
            0.0 when the request may go ahead, else the seconds until one is available.

        >>> b = TokenBuckets(rate_per_s=1.0, burst=2)
        >>> [b.take("t", now=0.0), b.take("t", now=0.0), b.take("t", now=0.0), b.take("t", now=1.0)]
        [0.0, 0.0, 1.0, 0.0]
        """
        now = time.monotonic() if now is None else now
        with self._lock:
            if len(self._state) >= self.MAX_KEYS:
                self._prune(now)
            tokens, at = self._state.get(key, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - at) * self.rate)
            if tokens < 1.0:
                self._state[key] = (tokens, now)
                return (1.0 - tokens) / self.rate
            self._state[key] = (tokens - 1.0, now)
            return 0.0

    def refund(self, key: str) -> None:
        """Give back one request taken from `key`'s bucket (never above the burst)."""
        with self._lock:
            if key in self._state:
                tokens, at = self._state[key]
                self._state[key] = (min(float(self.burst), tokens + 1.0), at)


@lru_cache
def token_buckets() -> TokenBuckets:
    """The process's buckets, sized by TOKEN_RATE_PER_S and TOKEN_RATE_BURST."""
    settings = get_settings()
    return TokenBuckets(rate_per_s=settings.token_rate_per_s, burst=settings.token_rate_burst)


@lru_cache
def login_buckets() -> TokenBuckets:
    """The process's login-attempt buckets (keys `user:<name>` and `peer:<address>`)."""
    return TokenBuckets(rate_per_s=LOGIN_REFILL_PER_S, burst=LOGIN_BURST)
