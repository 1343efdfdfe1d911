"""Kineto's own flow events (`ph` s/t/f) kept as `Flows` rows, or skipped with a reason.

Why: Kineto links a forward op to its backward op with a `fwdbwd` flow (an `s` on the
forward op, an `f` with `bp: "e"` on the backward op, one `id`), and a user's
`record_function` code can add flows of its own; nothing else in the trace says which ops
pair up. The `ac2g` launch → GPU flows are not kept: perfdash rebuilds them from the
events' correlation ids for every format (`backend.services.traces.chrome_lines`), so
keeping Kineto's copy would store, for a large trace, millions of rows that say nothing
new.

Times go through `ts_to_ns` like the events', so a flow's `ts` is the same ns as the op it
sits on. Public surface: `add_flow`, `add_typed_flow`, `is_flow`, `REBUILT_CATEGORIES`.
"""

from __future__ import annotations

from typing import Any

from ingest.events import FLOW_PHASES, Flows, ParseReport
from ingest.parsers._kineto_typed import KinetoEvent
from ingest.parsers._kineto_values import as_int, float_us_to_ns, ts_to_ns

REBUILT_CATEGORIES = frozenset({"ac2g"})
# Categories that are flows whatever their `ph` says: a `fwdbwd` event of another phase is
# damage worth a warning, where an unknown category's `M` or `i` event is just not ours.
FLOW_CATEGORIES = frozenset({"fwdbwd", "ac2g"})
_MAX_ID = 2**63 - 1  # the Parquet column is int64


def add_flow(
    item: dict[str, Any], index: int, base_ns: int, report: ParseReport, flows: Flows
) -> None:
    """Append `item` (a flow event, as `is_flow` says) to `flows`, or skip it with a reason."""
    cat = item.get("cat")
    if type(cat) is str and cat in REBUILT_CATEGORIES:
        return
    try:
        phase = item.get("ph")
        if phase not in FLOW_PHASES:
            raise ValueError(f"unknown flow phase {_short(phase)}")
        flow_id = _flow_id(item.get("id"))
        ts_ns = base_ns + ts_to_ns(item["ts"])
        if not -_MAX_ID - 1 <= ts_ns <= _MAX_ID:
            raise ValueError(f"time {_short(item['ts'])} is past 2**63 ns")
        pid, tid = _thread(item.get("pid"), "pid"), _thread(item.get("tid"), "tid")
    except (TypeError, ValueError, KeyError) as error:
        report.skip(f"traceEvents[{index}] (flow {_short(cat)}): {type(error).__name__}: {error}")
        return
    name = item.get("name")
    flows.add(
        flow_id,
        cat if type(cat) is str else "",
        name if type(name) is str else "",
        phase,
        ts_ns,
        pid,
        tid,
        item.get("bp") == "e",
    )


def add_typed_flow(
    e: KinetoEvent, index: int, base_ns: int, report: ParseReport, flows: Flows
) -> None:
    """`add_flow` for a typed element: the usual types (an int id, a float or int `ts`, int
    pid and tid: msgspec has checked they fit int64) straight in, like the events' fast
    path; anything else through `add_flow`, so its row or skip is the generic one."""
    flow_id, ts, pid, tid, phase, cat, name = e.id, e.ts, e.pid, e.tid, e.ph, e.cat, e.name
    if (
        type(flow_id) is int
        and flow_id >= 0
        and phase in FLOW_PHASES
        and type(pid) is int
        and type(tid) is int
        and type(cat) is str
        and type(name) is str
    ):
        if type(ts) is float:
            start = round(ts * 1000)
            if start / 1000 != ts:
                start = float_us_to_ns(ts)
        elif type(ts) is int:
            start = ts * 1000
        else:
            add_flow(e.as_item(), index, base_ns, report, flows)
            return
        if -_MAX_ID - 1 <= base_ns + start <= _MAX_ID:
            flows.add(flow_id, cat, name, phase, base_ns + start, pid, tid, e.bp == "e")
            return
    add_flow(e.as_item(), index, base_ns, report, flows)


def is_flow(cat: object, phase: object) -> bool:
    """Whether an event of no stored kind is a flow event (or a damaged one)."""
    return phase in FLOW_PHASES or (type(cat) is str and cat in FLOW_CATEGORIES)


def _flow_id(value: object) -> int:
    """A flow id as an integer in [0, 2**63): an int, or a decimal or 0x string."""
    if type(value) is str:
        try:
            value = int(value, 0)
        except ValueError:
            raise ValueError(f"flow id {_short(value)} is not an integer") from None
    if type(value) is not int:
        why = "no flow id" if value is None else f"flow id {_short(value)} is not an integer"
        raise TypeError(why)
    if not 0 <= value <= _MAX_ID:
        raise ValueError(f"flow id {_short(value)} is outside [0, 2**63)")
    return value


def _thread(value: object, what: str) -> int | None:
    """A pid or tid read as the events' are (`as_int`), so the flow lands on their track."""
    number = as_int(value)
    if number is not None and not -_MAX_ID - 1 <= number <= _MAX_ID:
        raise ValueError(f"{what} {_short(value)} is not a 64-bit integer")
    return number


def _short(value: object) -> str:
    return repr(value)[:40]
