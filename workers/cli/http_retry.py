"""Send an idempotent HTTP request again while the server is briefly unavailable.

CI pushes must survive a database restart or a busy server: the request is resent, with
the same body (its run key is what makes the second send store nothing twice), after a
connection error or a 429/502/503/504. The wait doubles from `BASE_DELAY_S` up to
`MAX_DELAY_S`, with jitter so many clients do not return at once, and is never shorter
than the server's `Retry-After`.

Public surface: `send_with_retry`, `RETRY_STATUSES`.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

RETRY_STATUSES = frozenset({429, 502, 503, 504})
BASE_DELAY_S = 0.5
MAX_DELAY_S = 30.0
log = logging.getLogger(__name__)


def retry_after_s(response: httpx.Response) -> float:
    """The server's Retry-After in seconds (a number or an HTTP date), else 0."""
    raw = response.headers.get("Retry-After", "").strip()
    if not raw:
        return 0.0
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(raw).timestamp() - time.time())
    except (TypeError, ValueError):
        return 0.0


def backoff_s(attempt: int, server_wait_s: float = 0.0) -> float:
    """The wait before resend number `attempt` (1-based): jittered doubling, at least the
    server's Retry-After, at most MAX_DELAY_S (unless the server asks for longer).

    >>> all(0.25 <= backoff_s(1) <= 0.5 for _ in range(100)), backoff_s(1, server_wait_s=3.0)
    (True, 3.0)
    """
    ceiling = min(MAX_DELAY_S, BASE_DELAY_S * 2 ** (attempt - 1))
    return max(server_wait_s, random.uniform(ceiling / 2, ceiling))


def send_with_retry(
    client: httpx.Client,
    method: str,
    url: str,
    *,
    retries: int,
    sleep: Callable[[float], None] = time.sleep,
    **kwargs: Any,
) -> httpx.Response:
    """Send the request, and up to `retries` more times while it fails transiently.

    Only for idempotent requests. Returns the last response (which may be an error the
    caller reports); raises the last `httpx.TransportError` if no response ever came.
    """
    for attempt in range(retries + 1):
        try:
            response = client.request(method, url, **kwargs)
        except httpx.TransportError as e:
            if attempt == retries:
                raise
            wait, why = backoff_s(attempt + 1), f"{type(e).__name__}: {e}"
        else:
            if response.status_code not in RETRY_STATUSES or attempt == retries:
                return response
            wait = backoff_s(attempt + 1, retry_after_s(response))
            why = f"HTTP {response.status_code}"
        log.warning("%s %s failed (%s); retry %d/%d in %.1f s", method, url, why,
                    attempt + 1, retries, wait)  # fmt: skip
        sleep(wait)
    raise AssertionError("unreachable")  # pragma: no cover
