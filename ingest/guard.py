"""Bounds on what one event may hold, enforced once for every parser in `TraceAggregator.feed`.

A trace is user input that is well-formed but hostile: a kernel name of 40 MB, NUL
characters (PostgreSQL text cannot hold them), `ts: 1e300` or nsys rows at the ends of
int64 (the database's BIGINT, and `start + dur`, would overflow). Checking here, on the one
pass every ingest makes, covers every format without each parser learning the rules.

- NUL characters in names become U+FFFD (the trace is stored; the name stays readable).
- A name longer than `MAX_NAME_CHARS`, or a start or end outside ±`TIME_LIMIT_NS`, stops
  the ingest with a `ParseError` that names the event (its position in the stream, kind,
  name and value).

The checks are cheap: names repeat, so each distinct name is looked at once (a set lookup
per event after that); times are checked by `ingest.stats.TraceStats` where it already
tracks the trace's span (only when an event extends it), and for kernels once over their
columns when the stream ends.

Public surface: `EventGuard`, `time_error`, `check_columns`, `MAX_NAME_CHARS`,
`TIME_LIMIT_NS`.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence

from ingest.errors import ParseError
from ingest.events import EventKind

MAX_NAME_CHARS = 64 * 1024  # real demangled C++ template kernel names reach ~10 KB
TIME_LIMIT_NS = 2**62  # start and end within ±2^62 ns (146 years), so `end - start` fits int64
_NUL = "\x00"
_REPLACEMENT = "\ufffd"


class EventGuard:
    """Remembers the names already checked; `name`/`names` return what may be stored."""

    def __init__(self) -> None:
        self.good: set[str] = set()
        self._fixed: dict[str, str] = {}

    def name(self, name: str, index: int, kind: EventKind) -> str:
        """The storable form of a name not yet in `good` (event `index` of the stream).

        Raises:
            ParseError: the name is longer than `MAX_NAME_CHARS`.
        """
        fixed = self._fixed.get(name)
        if fixed is not None:
            return fixed
        if type(name) is not str:
            name = str(name)
        if len(name) > MAX_NAME_CHARS:
            raise ParseError(
                f"a {kind.value} name is {len(name)} characters long, over the "
                f"{MAX_NAME_CHARS}-character limit (it starts {name[:60]!r})",
                location=f"event {index}",
            )
        if _NUL in name:
            clean = name.replace(_NUL, _REPLACEMENT)
            self._fixed[name] = clean
            self.good.add(clean)
            return clean
        self.good.add(name)
        return name

    def names(self, names: Sequence[str], first: int, kind: EventKind) -> Sequence[str]:
        """A block's name column, checked (returned unchanged when no name needed fixing);
        each distinct name is looked at once, the column itself only in C."""
        new = [n for n in dict.fromkeys(names) if n not in self.good]
        if not new:
            return names
        at = dict(zip(reversed(names), range(len(names) - 1, -1, -1), strict=True))
        fixed = {n: self.name(n, first + at[n], kind) for n in new}
        changed = {n: f for n, f in fixed.items() if f is not n}
        return list(map(changed.get, names, names)) if changed else names


def time_error(
    value: int, what: str, kind: EventKind, name: str, where: str | None = None
) -> ParseError:
    """The error for a start or end outside ±`TIME_LIMIT_NS` (`where` may be filled in by
    the caller that knows the event's place)."""
    shown = f"{value:.3e}" if abs(value) >= 10**20 else str(value)
    return ParseError(
        f"a {kind.value} event ({name[:60]!r}) {what} at {shown} ns, outside the supported "
        f"range of ±2^62 ns (about 146 years)",
        location=where,
    )


def check_columns(
    kind: EventKind,
    starts: Sequence[int],
    durs: Sequence[int],
    name_of: Callable[[int], str],
    what: str,
    first: int = 0,
) -> None:
    """`time_error` for columns of events (a block, the kernels): only the extremes are
    looked at, with builtins, so the check costs a pass in C, not one per row in Python.

    Raises:
        ParseError: located as `what` and the row's index plus `first`.
    """
    if not len(starts):
        return
    ends = list(map(operator.add, starts, durs))
    for values, verb in ((starts, "starts"), (ends, "ends")):
        for extreme in (min(values), max(values)):
            if not -TIME_LIMIT_NS < extreme < TIME_LIMIT_NS:
                i = values.index(extreme)
                raise time_error(extreme, verb, kind, name_of(i), f"{what} {first + i}")
