"""What an area selection of the timeline holds: its events summed by name and by
category, like the "Slices" tab of Perfetto UI's area selection.

An event counts when it is of a drawn kind, sits in a chosen lane and overlaps the range
[start_ns, end_ns) (an instant, when it lies in the range). `total_ns` is its time inside
the range, `wall_ns` its full duration. One DuckDB query groups the events by what names
their lane (kind, rank, device, stream, pid, tid) and name; the groups are placed in lanes
and merged per name here.

Public surface: `get_area_summary`.
"""

from collections import defaultdict

from sqlmodel import Session

from backend.models.timeline import AreaCategory, AreaName, AreaSummary
from backend.services.datasets import query_events
from backend.services.timeline import lanes as lanes_mod
from backend.services.timeline.lanes import FAMILY_KINDS
from backend.services.timeline.stored_lanes import list_lanes
from backend.services.timeline.windows import (
    check_range,
    choose_lanes,
    lane_keys,
    ready_trace,
)

_GROUPS = """
SELECT kind, name, rank, device, stream, pid, tid, count(*),
    sum(least(start_ns + dur_ns, ?) - greatest(start_ns, ?)), sum(dur_ns)
FROM {events}
WHERE kind IN (SELECT unnest(?)) AND start_ns < ? AND (start_ns >= ? OR start_ns + dur_ns > ?)
GROUP BY ALL
"""


def get_area_summary(
    *,
    session: Session,
    trace_id: str,
    start_ns: int,
    end_ns: int,
    lanes: list[int] | None = None,
    limit: int = 500,
) -> AreaSummary:
    """The events of the chosen lanes overlapping [start_ns, end_ns), summed per name
    (busiest in the range first) and per category.

    Args:
        session: database session.
        trace_id: the trace.
        start_ns: start of the range, absolute ns.
        end_ns: end of the range (excluded).
        lanes: lane ids (as `list_lanes` numbers them); None for every visible lane.
        limit: most names returned; `truncated` says when there were more.

    Raises:
        NotFoundError: no such trace.
        InvalidInputError: the trace is not ready, the range is empty or past int64, or a
            lane is unknown.
    """
    trace = ready_trace(session, trace_id)
    check_range(start_ns, end_ns)
    chosen = choose_lanes(list_lanes(session, trace_id), lanes)
    keys = lane_keys(chosen)
    kinds = sorted({k for lane in chosen for k in FAMILY_KINDS.get(lane.family, ())})
    names: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    params = [end_ns, start_ns, kinds, end_ns, start_ns, start_ns]
    rows = query_events(trace, _GROUPS, params) if kinds else []
    for kind, name, rank, device, stream, pid, tid, count, clipped, wall in rows:
        key = lanes_mod.lane_key(kind, rank, device, stream, pid, tid)
        if key is None or key not in keys:
            continue
        sums = names[(lanes_mod.category(kind, name), name)]
        sums[0] += count
        sums[1] += int(clipped)
        sums[2] += int(wall)
    return _summary(trace_id, start_ns, end_ns, names, limit)


def _summary(
    trace_id: str, start_ns: int, end_ns: int, names: dict[tuple[str, str], list[int]], limit: int
) -> AreaSummary:
    per_name = [
        AreaName(name=name, category=category, count=count, total_ns=total, wall_ns=wall,
                 avg_ns=wall // count)
        for (category, name), (count, total, wall) in names.items()
    ]  # fmt: skip
    per_name.sort(key=lambda n: (-n.total_ns, n.name, n.category))
    categories: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for item in per_name:
        categories[item.category][0] += item.count
        categories[item.category][1] += item.total_ns
    per_category = [
        AreaCategory(category=category, count=count, total_ns=total)
        for category, (count, total) in sorted(categories.items(), key=lambda c: (-c[1][1], c[0]))
    ]
    return AreaSummary(
        trace_id=trace_id, start_ns=start_ns, end_ns=end_ns, names=per_name[:limit],
        categories=per_category, truncated=len(per_name) > limit,
    )  # fmt: skip
