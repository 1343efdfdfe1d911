"""Five-field cron expressions (`minute hour day-of-month month day-of-week`), pure.

Enough of cron for benchmark schedules: `*`, lists, ranges and steps (`*/15`, `1-5`,
`0,30`), and `@hourly`/`@daily`/`@weekly`/`@nightly`. Day-of-week 0 and 7 are Sunday.
When both day fields are restricted, either may match (as in Vixie cron).

Public surface: `parse_cron`, `due_between`, `CronError`.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta

_RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
_ALIASES = {
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@nightly": "0 0 * * *",
    "@weekly": "0 0 * * 0",
}
# A scheduler that was down for longer than this does not replay every missed minute.
MAX_LOOKBACK = timedelta(days=1)


class CronError(ValueError):
    """The expression is not valid cron; the message names the field."""


@dataclass(frozen=True)
class Cron:
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    any_day: bool
    any_weekday: bool

    def matches(self, when: datetime) -> bool:
        """True when `when` (to the minute) is a firing time."""
        if when.minute not in self.minutes or when.hour not in self.hours:
            return False
        if when.month not in self.months:
            return False
        day_ok = when.day in self.days
        weekday_ok = (when.isoweekday() % 7) in self.weekdays
        if self.any_day or self.any_weekday:
            return day_ok and weekday_ok
        return day_ok or weekday_ok


def _field(text: str, index: int) -> frozenset[int]:
    lo, hi = _RANGES[index]
    values: set[int] = set()
    for part in text.split(","):
        base, _, step_text = part.partition("/")
        try:
            step = int(step_text) if step_text else 1
            if base == "*":
                start, end = lo, hi
            elif "-" in base:
                start, end = (int(x) for x in base.split("-", 1))
            else:
                start = end = int(base)
        except ValueError as e:
            raise CronError(f"field {index + 1} ({text!r}) is not a number, range or step") from e
        if step < 1 or start < lo or end > hi or start > end:
            raise CronError(f"field {index + 1} ({text!r}) is outside {lo}-{hi}")
        values.update(range(start, end + 1, step))
    return frozenset(v % 7 if index == 4 else v for v in values)


def parse_cron(expression: str) -> Cron:
    """Parse an expression.

    >>> parse_cron("*/30 2 * * 1-5").matches(datetime(2026, 11, 30, 2, 30))
    True
    >>> parse_cron("@daily").matches(datetime(2026, 11, 30, 0, 1))
    False

    Raises:
        CronError: wrong number of fields, or a field out of range.
    """
    fields = _ALIASES.get(expression.strip(), expression).split()
    if len(fields) != 5:
        raise CronError(f"cron needs 5 fields (minute hour day month weekday), got {len(fields)}")
    minutes, hours, days, months, weekdays = (_field(f, i) for i, f in enumerate(fields))
    return Cron(
        minutes, hours, days, months, weekdays, fields[2] == "*", any_weekday=fields[4] == "*"
    )


def due_between(cron: Cron, after: datetime, until: datetime) -> datetime | None:
    """The latest firing time in (after, until], to the minute, or None."""
    start = max(after, until - MAX_LOOKBACK)
    when = until.replace(second=0, microsecond=0)
    while when > start:
        if cron.matches(when):
            return when
        when -= timedelta(minutes=1)
    return None
