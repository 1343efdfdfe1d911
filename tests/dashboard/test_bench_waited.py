"""How long a queued run has waited, as the Benchmarks page writes it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from dashboard.components.benchmark_tables import waited

NOW = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("ago", "shown"),
    [
        (timedelta(0), "0 s"),
        (timedelta(seconds=59), "59 s"),
        (timedelta(seconds=60), "1 min 0 s"),
        (timedelta(minutes=59, seconds=59), "59 min 59 s"),
        (timedelta(hours=26, minutes=5), "26 h 5 min"),
        (-timedelta(seconds=3), "0 s"),  # the dashboard's clock a little behind the API's
    ],
)
def test_waited(ago: timedelta, shown: str) -> None:
    created = (NOW - ago).isoformat()
    assert waited(created, NOW) == shown
    assert waited(created.replace("+00:00", ""), NOW) == shown  # naive means UTC (SQLite)
