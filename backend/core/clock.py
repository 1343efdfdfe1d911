"""The one definition of "now" for stored timestamps: timezone-aware UTC.

Every `DateTime(timezone=True)` column holds UTC, so models use `utc_now` as their
`default_factory` and services stamp rows with it, instead of each module keeping its own
copy. `default_factory` keeps a reference to the function itself, so patching this module
does not move the models' defaults; tests that need another time pass it in explicitly.

Public surface: `utc_now`.
"""

from datetime import UTC, datetime


def utc_now() -> datetime:
    """The current time as an aware UTC datetime."""
    return datetime.now(UTC)
