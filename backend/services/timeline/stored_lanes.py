"""A trace's timeline lanes as stored at ingest, read once per dataset.

Every window, overview and counter request needs the trace's lanes (40 rows for an
8-rank job, each with its JSON `level_blocks`): reading and decoding them per request
cost ~4 ms of an 8-rank window. Lanes are written in the transaction that names the
trace's dataset and never change while it does, so they are kept per (trace, dataset):
a re-ingest names a new dataset, which reads them afresh.

Public surface: `list_lanes`.
"""

import threading
from collections import OrderedDict

from sqlmodel import Session, col, select

from backend.models.timeline import TimelineLane
from backend.models.traces import Trace

_KEPT = 64  # (trace, dataset, hidden) entries: a few hundred small rows each at most
_lock = threading.Lock()
_cache: OrderedDict[tuple[str, str, bool], tuple[TimelineLane, ...]] = OrderedDict()


def list_lanes(session: Session, trace_id: str, *, hidden: bool = False) -> list[TimelineLane]:
    """The trace's lanes in display order (hidden per-device lanes only when asked).

    The rows are shared between requests: read them, never change them."""
    trace = session.get(Trace, trace_id)
    dataset = trace.dataset if trace is not None else None
    key = (trace_id, dataset or "", hidden)
    with _lock:
        kept = _cache.get(key) if dataset else None
        if kept is not None:
            _cache.move_to_end(key)
            return list(kept)
    query = select(TimelineLane).where(col(TimelineLane.trace_id) == trace_id)
    query = query.where(col(TimelineLane.hidden) == hidden).order_by(col(TimelineLane.lane))
    lanes = tuple(session.exec(query).all())
    if dataset:
        for lane in lanes:  # loaded in full; detached, so no commit expires them
            session.expunge(lane)
        with _lock:
            _cache[key] = lanes
            while len(_cache) > _KEPT:
                _cache.popitem(last=False)
    return list(lanes)
