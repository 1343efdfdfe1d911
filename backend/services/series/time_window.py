"""When a metric run happened: pushed timestamps, held to a window of plausible times.

A run's timestamp orders every series and the runs page, so one absurd value poisons the
shared pages for everyone: ``9999-12-31T23:59:59-23:59`` is year 10000 in UTC, which
PostgreSQL stores and no driver can read back. Pushes outside the window (from
``PERFDASH_METRIC_MIN_YEAR`` to now plus ``PERFDASH_METRIC_MAX_FUTURE_S``) are refused
with a located error; reads keep to the same window (`within`), so a row put there some
other way (SQL, an older version) is skipped and counted instead of failing the page.

Public surface: `TimeWindow`, `parse_timestamp`, `within`.
"""

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement

from backend.core.config import get_settings

SETTINGS = "PERFDASH_METRIC_MIN_YEAR, PERFDASH_METRIC_MAX_FUTURE_S"


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """The plausible times of a metric run: from a year's start to a little past now."""

    min_year: int = 2000
    max_future_s: int = 86400

    @classmethod
    def current(cls) -> "TimeWindow":
        """The window the settings give."""
        settings = get_settings()
        return cls(settings.metric_min_year, settings.metric_max_future_s)

    def bounds(self, now: datetime) -> tuple[datetime, datetime]:
        """The earliest and latest accepted time, as of `now`."""
        return datetime(self.min_year, 1, 1, tzinfo=UTC), now + timedelta(seconds=self.max_future_s)


def _from_text(raw: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError as e:
        raise ValueError(f"not an ISO 8601 timestamp: {raw[:40]!r}") from e
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _seconds(raw: float) -> float:
    try:
        seconds = float(raw)
    except OverflowError:  # an integer too large for a float
        seconds = math.inf
    if not math.isfinite(seconds):
        raise ValueError("expected a finite number of epoch seconds")
    return seconds


def parse_timestamp(raw: Any, window: TimeWindow, *, now: datetime) -> datetime:
    """Read a pushed timestamp (ISO 8601 text or epoch seconds) as an aware UTC time.

    Args:
        raw: the decoded JSON value; None means `now`.
        window: the accepted range.
        now: the current time (aware).

    Returns:
        The time in UTC.

    Raises:
        ValueError: not a timestamp, or outside the window; the message says which.

    >>> w, now = TimeWindow(), datetime(2026, 12, 1, tzinfo=UTC)
    >>> parse_timestamp("2026-11-30T10:00:00+02:00", w, now=now).isoformat()
    '2026-11-30T08:00:00+00:00'
    >>> parse_timestamp(-1e12, w, now=now)
    Traceback (most recent call last):
    ...
    ValueError: -1000000000000.0 is outside 2000-01-01T00:00:00+00:00 .. 2026-12-02T00:00:00+00:00 \
(PERFDASH_METRIC_MIN_YEAR, PERFDASH_METRIC_MAX_FUTURE_S)
    """
    if raw is None:
        return now
    lo, hi = window.bounds(now)
    if isinstance(raw, str):
        when = _from_text(raw)
        # Compared before converting: converting overflows at the calendar's ends.
        if not lo <= when <= hi:
            raise _outside(repr(raw[:40]), lo, hi)
        return when.astimezone(UTC)
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        seconds = _seconds(raw)
        if not lo.timestamp() <= seconds <= hi.timestamp():
            raise _outside(str(raw)[:40], lo, hi)
        return datetime.fromtimestamp(seconds, UTC)
    raise ValueError("expected an ISO 8601 string or epoch seconds")


def _outside(shown: str, lo: datetime, hi: datetime) -> ValueError:
    return ValueError(
        f"{shown} is outside {lo.isoformat()} .. {hi.isoformat(timespec='seconds')} ({SETTINGS})"
    )


def within(column: Any, window: TimeWindow, now: datetime) -> ColumnElement[bool]:
    """A SQL condition: the timestamp `column` lies in the window (what reads keep)."""
    lo, hi = window.bounds(now)
    condition: ColumnElement[bool] = column.between(lo, hi)
    return condition
