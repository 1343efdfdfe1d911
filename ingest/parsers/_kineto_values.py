"""Kineto's numbers as perfdash stores them: µs times and durations as exact integer ns,
ids that older traces wrote as strings as integers.

Split from `kineto` to keep that module to the event conversion. Public surface:
`ts_to_ns`, `float_us_to_ns`, `dur_to_ns`, `as_int`.
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation


def ts_to_ns(value: object) -> int:
    """A Kineto `ts` (µs; quoted by the reader so no digit is lost) as integer ns.

    >>> ts_to_ns("5151594869354.904"), ts_to_ns("-1.5"), ts_to_ns(3), ts_to_ns("1e3")
    (5151594869354904, -1500, 3000, 1000000)
    """
    if type(value) is str:
        whole, _, frac = value.partition(".")
        if len(frac) <= 3 and whole.lstrip("-").isdigit() and (not frac or frac.isdigit()):
            ns = int(whole) * 1000
            if frac:
                f = int(frac) * _FRAC_SCALE[len(frac)]
                ns = ns - f if whole.startswith("-") else ns + f
            return ns
        try:
            exact = Decimal(value) * 1000
        except InvalidOperation:
            raise ValueError(f"time {value!r} is not a number") from None
        if not exact.is_finite():
            raise ValueError("time is not finite")
        return int(exact.to_integral_value(rounding=ROUND_HALF_EVEN))
    if type(value) is float:
        return float_us_to_ns(value)
    return dur_to_ns(value, what="time")


def float_us_to_ns(value: float) -> int:
    """The integer ns whose 3-decimal µs text parses to `value` (exact below 2**43 µs).

    The reader quotes larger `ts` values, so this never has to guess.

    >>> float_us_to_ns(5151594869354.904)
    5151594869354904
    """
    if value != value or value in (_INF, -_INF):
        raise ValueError("time is not finite")
    ns = round(value * 1000)
    if ns / 1000 != value:
        for candidate in (ns - 1, ns + 1):
            if candidate / 1000 == value:
                return candidate
    return ns


_FRAC_SCALE = (1000, 100, 10, 1)


def dur_to_ns(value: object, what: str = "duration") -> int:
    """A µs duration (int, float or numeric string) as integer ns; never negative or NaN.

    Durations are short, so a float64 holds them exactly to the nanosecond.

    >>> dur_to_ns(1.5), dur_to_ns(3), dur_to_ns("2.001")
    (1500, 3000, 2001)
    """
    t = type(value)
    if t is float:
        if value != value or value in (_INF, -_INF):
            raise ValueError(f"{what} is not finite")
        ns = round(value * 1000)  # type: ignore[operator]
    elif t is int:
        ns = value * 1000  # type: ignore[operator]
    elif t is str:
        ns = ts_to_ns(value)
    else:
        raise TypeError(f"{what} is a {_TYPE_WORDS.get(t, t.__name__)}, not a number")
    if what == "duration" and ns < 0:
        raise ValueError(f"negative duration {value!r}")
    return ns


_INF = float("inf")
_TYPE_WORDS = {bool: "boolean", type(None): "null", list: "list", dict: "object"}


def as_int(value: object) -> int | None:
    """Best-effort integer for ids that older traces wrote as strings ("stream 7").

    >>> as_int("stream 7"), as_int(12), as_int("0x1f"), as_int(None)
    (7, 12, 31, None)
    """
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    if isinstance(value, str):
        token = value.strip().split(" ")[-1]
        try:
            return int(token, 0)
        except ValueError:
            return None
    return None
