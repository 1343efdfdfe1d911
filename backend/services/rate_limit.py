"""Per-token request rate limit: an in-process token bucket.

Each API token gets a bucket of `burst` requests refilled at `rate_per_s`. The buckets
live in this process's memory, which is exact for the embedded `perfdash serve` (one API
process). With N API processes or hosts behind a load balancer each keeps its own buckets,
so a token may send up to N times the rate; a shared limiter (Redis) would be the fix.

Public surface: `TokenBuckets`, `token_buckets`.
"""

import threading
import time
from functools import lru_cache

from backend.core.config import get_settings


class TokenBuckets:
    """Thread-safe buckets keyed by the token's stored hash (unique, never reused)."""

    def __init__(self, *, rate_per_s: float, burst: int) -> None:
        self.rate, self.burst = rate_per_s, burst
        self._state: dict[str, tuple[float, float]] = {}  # key -> (tokens, at)
        self._lock = threading.Lock()

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
            tokens, at = self._state.get(key, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - at) * self.rate)
            if tokens < 1.0:
                self._state[key] = (tokens, now)
                return (1.0 - tokens) / self.rate
            self._state[key] = (tokens - 1.0, now)
            return 0.0


@lru_cache
def token_buckets() -> TokenBuckets:
    """The process's buckets, sized by TOKEN_RATE_PER_S and TOKEN_RATE_BURST."""
    settings = get_settings()
    return TokenBuckets(rate_per_s=settings.token_rate_per_s, burst=settings.token_rate_burst)
