"""How CPU runtime calls and the GPU work they launch find each other, in both directions.

A GPU event (kernel, memcpy, memset) is launched by the runtime call with its correlation
id, on its rank where it names one, in its process where it names one (nsys GPU work does;
correlation ids are per process there), and the latest such call at or before it (ids can
be reused). `find_launch` applies the rule to one GPU event, `LAUNCHED_BY` is the same rule
as SQL, for the reverse look-up (a call to every GPU event it launched) in `flows`.

Public surface: `EventRow`, `ROW_COLUMNS`, `one_event`, `find_launch`, `enclosing_cpu_op`,
`LAUNCHED_BY`, `GPU_WORK`.
"""

from typing import Any, NamedTuple

from backend.models.traces import Trace
from backend.services.datasets import query_events
from backend.services.timeline.lanes import FAMILY_KINDS, GPU

GPU_WORK = FAMILY_KINDS[GPU]  # the kinds a runtime call launches


class EventRow(NamedTuple):
    """One stored event as read from the dataset."""

    id: int
    kind: str
    name: str
    start_ns: int
    dur_ns: int
    rank: int | None
    device: int | None
    stream: int | None
    pid: int | None
    tid: int | None
    correlation: int | None
    args: str | None


ROW_COLUMNS = ", ".join(EventRow._fields)

# `c` launched `g` (aliases of `{events}` rows): `find_launch`'s rule, with no later call of
# the same correlation (by start, then id) between them.
LAUNCHED_BY = """
    c.kind = 'runtime' AND g.correlation = c.correlation AND c.start_ns <= g.start_ns
    AND (g.rank IS NULL OR c.rank = g.rank) AND (g.pid IS NULL OR c.pid = g.pid)
    AND NOT EXISTS (
        SELECT 1 FROM {events} AS r WHERE r.kind = 'runtime' AND r.correlation = g.correlation
        AND r.start_ns <= g.start_ns AND (g.rank IS NULL OR r.rank = g.rank)
        AND (g.pid IS NULL OR r.pid = g.pid)
        AND (r.start_ns > c.start_ns OR (r.start_ns = c.start_ns AND r.id > c.id))
    )
"""


def one_event(trace: Trace, where: str, params: list[Any], order: str = "id") -> EventRow | None:
    """The first event (by `order`) matching `where`, or None.

    Args:
        trace: a ready trace.
        where: an SQL condition over the events' columns, with `?` placeholders.
        params: the placeholders' values.
        order: the SQL ordering that decides which match is first.

    Returns:
        The event, or None when nothing matches.
    """
    sql = f"SELECT {ROW_COLUMNS} FROM {{events}} WHERE {where} ORDER BY {order} LIMIT 1"
    rows = query_events(trace, sql, params)
    return EventRow(*rows[0]) if rows else None


def find_launch(trace: Trace, event: EventRow) -> EventRow | None:
    """The runtime call that launched a GPU event (the module's rule), or None.

    Args:
        trace: a ready trace.
        event: a kernel, memcpy or memset.

    Returns:
        The call, or None when the event has no correlation or no call matches.
    """
    if event.correlation is None:
        return None
    where = "kind = 'runtime' AND correlation = ? AND start_ns <= ?"
    params: list[Any] = [event.correlation, event.start_ns]
    if event.rank is not None:
        where += " AND rank = ?"
        params.append(event.rank)
    if event.pid is not None:  # nsys GPU work names its process; correlation ids are per process
        where += " AND pid = ?"
        params.append(event.pid)
    return one_event(trace, where, params, order="start_ns DESC, id DESC")


def enclosing_cpu_op(trace: Trace, call: EventRow) -> EventRow | None:
    """The innermost cpu_op on the call's thread that contains it, or None.

    Args:
        trace: a ready trace.
        call: an event on a CPU thread (a runtime call).

    Returns:
        The latest-starting (then shortest) cpu_op around the call, or None.
    """
    where = (
        "kind = 'cpu_op' AND pid IS NOT DISTINCT FROM ? AND tid IS NOT DISTINCT FROM ? "
        "AND rank IS NOT DISTINCT FROM ? AND start_ns <= ? AND start_ns + dur_ns >= ?"
    )
    params = [call.pid, call.tid, call.rank, call.start_ns, call.start_ns + call.dur_ns]
    return one_event(trace, where, params, order="start_ns DESC, dur_ns ASC")
