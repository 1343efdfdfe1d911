"""Kernel stats: written once at ingest, then paged, sorted, searched and grouped for the API.

Per-name rows live in `kernel_stats`, per-stream/device/rank/CPU-op rows in
`kernel_group_stats` (see `backend.models.kernel_stats` for why two tables).

Public surface: `store_kernel_stats`, `list_kernel_stats`.
"""

from collections.abc import Sequence
from typing import Any

from sqlalchemy import delete, insert
from sqlalchemy.engine import Connection
from sqlmodel import Session, col, func, select

from backend.models.kernel_stats import (
    KernelGroupBy,
    KernelGroupStatPublic,
    KernelGroupStatRecord,
    KernelSort,
    KernelStatPublic,
    KernelStatRecord,
    KernelStatsPublic,
)
from backend.services.traces.lifecycle import get_trace
from ingest.stats import KernelGroupStat, KernelStat

_SORT_COLUMNS = {
    KernelSort.TOTAL: "total_ns",
    KernelSort.COUNT: "count",
    KernelSort.MEAN: "mean_ns",
    KernelSort.MAX: "max_ns",
    KernelSort.P95: "p95_ns",
}


def store_kernel_stats(
    conn: Connection,
    *,
    trace_id: str,
    kernels: Sequence[KernelStat],
    groups: Sequence[KernelGroupStat],
) -> None:
    """Replace the trace's kernel stats rows, in the caller's transaction.

    Args:
        conn: a connection inside the ingest transaction.
        trace_id: the trace.
        kernels: per-name stats, largest total first (their order becomes `rank`).
        groups: per-group stats, ordered by `group_by` then total (order becomes `position`).
    """
    for table in (KernelStatRecord, KernelGroupStatRecord):
        conn.execute(delete(table).where(table.trace_id == trace_id))  # type: ignore[arg-type]
    if kernels:
        rows = [{"trace_id": trace_id, "rank": i, **k.as_dict()} for i, k in enumerate(kernels)]
        conn.execute(insert(KernelStatRecord), rows)
    if groups:
        positions: dict[str, int] = {}
        group_rows: list[dict[str, Any]] = []
        for g in groups:
            position = positions[g.group_by] = positions.get(g.group_by, -1) + 1
            group_rows.append({"trace_id": trace_id, "position": position, **g.as_dict()})
        conn.execute(insert(KernelGroupStatRecord), group_rows)


def list_kernel_stats(
    *,
    session: Session,
    trace_id: str,
    group: KernelGroupBy = KernelGroupBy.NAME,
    sort: KernelSort = KernelSort.TOTAL,
    q: str | None = None,
    limit: int = 10,
    offset: int = 0,
) -> KernelStatsPublic:
    """One page of kernel stats rows, with the count of matching rows and total kernel time.

    Raises:
        NotFoundError: no such trace.
    """
    get_trace(session=session, trace_id=trace_id)
    total = session.exec(
        select(func.coalesce(func.sum(KernelStatRecord.total_ns), 0)).where(
            KernelStatRecord.trace_id == trace_id
        )
    ).one()
    if group is KernelGroupBy.NAME:
        rows, count = _page(session, KernelStatRecord, trace_id, None, sort, q, limit, offset)
        public: Any = [KernelStatPublic.model_validate(r, from_attributes=True) for r in rows]
    else:
        rows, count = _page(session, KernelGroupStatRecord, trace_id, group, sort, q, limit, offset)
        public = [KernelGroupStatPublic.model_validate(r, from_attributes=True) for r in rows]
    return KernelStatsPublic(
        trace_id=trace_id,
        items=public,
        count=count,
        total_kernel_ns=int(total),
        limit=limit,
        offset=offset,
        sort=sort,
        group=group,
        q=q,
    )


def _page(
    session: Session,
    table: type[KernelStatRecord] | type[KernelGroupStatRecord],
    trace_id: str,
    group: KernelGroupBy | None,
    sort: KernelSort,
    q: str | None,
    limit: int,
    offset: int,
) -> tuple[list[Any], int]:
    """One page of `table`'s rows, and how many rows match."""
    is_name = table is KernelStatRecord
    label = col(table.name if is_name else table.key)  # type: ignore[union-attr]
    conditions: list[Any] = [table.trace_id == trace_id]
    if group is not None:
        conditions.append(KernelGroupStatRecord.group_by == group.value)
    if q:
        conditions.append(func.lower(label).contains(q.lower(), autoescape=True))
    tiebreak = col(table.rank if is_name else table.position)  # type: ignore[union-attr]
    if sort is KernelSort.NAME:
        order = [label.asc(), tiebreak]
    else:
        column = getattr(table, _SORT_COLUMNS[sort])
        order = [func.coalesce(column, -1).desc(), tiebreak]
    rows = session.exec(
        select(table).where(*conditions).order_by(*order).offset(offset).limit(limit)
    ).all()
    count = session.exec(select(func.count()).select_from(table).where(*conditions)).one()
    return list(rows), int(count)
