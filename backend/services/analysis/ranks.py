"""Per rank: how its GPUs spent their span, comm/compute overlap, wait, and stragglers.

A rank's span runs from its first GPU activity to its last (all its devices); the split is
the summary's (compute first, then communication, memcpy, memset; idle the rest), and
overlap is the time its communication and compute kernels ran together, as a share of its
communication time. Its collective wait is summed over its collective instances
(`collectives`).

Traces without ranks but with several devices (an nsys report of several processes) get
a row per device. Straggler rule (two ranks or more): a rank whose compute time exceeds the
median over the ranks by more than `STRAGGLER_PCT` percent, or whose idle time does and by
at least 1% of
its span (a rank starved by its host). How long the others waited for it: over the
collective instances it reached last, the others' waits summed.

Each unit's split is computed once at ingest (`gpu_derive`), the waits at read time from
every rank's communication kernels (`collectives`).

Public surface: `compute_ranks`, `STRAGGLER_PCT`.
"""

from statistics import median
from typing import Any

from sqlmodel import Session

from backend.models.ranks import RankRow, RanksPublic, Straggler
from backend.services.analysis.collectives import Instances, Unit, collective_instances
from backend.services.analysis.derived import query_derived
from backend.services.analysis.gpu_work import ready

STRAGGLER_PCT = 10.0
RANK_RULE = (
    f"a rank straggles when its compute (or idle, if also >= 1% of its span) is more than "
    f"{STRAGGLER_PCT:g}% above the median over ranks; others' wait = their waits in the "
    "collective instances this rank started last"
)


def _waits(found: Instances) -> tuple[dict[Unit, int], dict[Unit, int]]:
    """Per rank: its own wait, and the others' wait in the instances it reached last."""
    own: dict[Unit, int] = {}
    total: dict[int, int] = {}  # instance -> every rank's wait in it
    last: dict[int, Unit] = {}  # instance -> the rank that started last
    for k, wait, n in zip(found.kernels, found.wait_ns, found.instance, strict=True):
        own[k.unit] = own.get(k.unit, 0) + wait
        if n >= 0:
            total[n] = total.get(n, 0) + wait
            if wait == 0:
                last.setdefault(n, k.unit)
    caused: dict[Unit, int] = {}
    for n, rank in last.items():
        caused[rank] = caused.get(rank, 0) + total[n]
    return own, caused


def _unit(row: RankRow) -> Unit:
    return (row.rank, None) if row.rank is not None else (None, row.devices[0])


def _stragglers(rows: list[RankRow], caused: dict[Unit, int]) -> list[Straggler]:
    ranked = [r for r in rows if r.rank is not None or len(r.devices) == 1]
    if len(ranked) < 2:
        return []
    out = []
    mid_compute = median(r.compute_ns for r in ranked)
    mid_idle = median(r.idle_ns for r in ranked)
    for r in ranked:
        kind, value, mid = "compute", r.compute_ns, mid_compute
        if not (mid and value > mid * (1 + STRAGGLER_PCT / 100)):
            kind, value, mid = "idle", r.idle_ns, mid_idle
            if not (value > mid * (1 + STRAGGLER_PCT / 100) and value - mid >= r.span_ns / 100):
                continue
        excess = round(100.0 * (value - mid) / mid, 1) if mid else 100.0
        wait = caused.get(_unit(r), 0)
        who = f"rank {r.rank}" if r.rank is not None else f"device {r.devices[0]}"
        out.append(
            Straggler(
                rank=r.rank, device=None if r.rank is not None else r.devices[0],
                compute_ns=r.compute_ns, median_compute_ns=int(mid_compute),
                excess_pct=excess, others_wait_ns=wait,
                message=(f"{who}: {kind} {value / 1e6:.3f} ms, {excess:g}% above the "
                         f"median over ranks; the others waited {wait / 1e6:.3f} ms for it in "
                         "collectives"),
            )
        )  # fmt: skip
    return out


# The units' splits (`gpu_derive`), each computed over its own span at ingest.
_SQL = """
SELECT * EXCLUDE (device), device FROM {rank_splits}
ORDER BY rank NULLS FIRST, device NULLS FIRST
"""


def _row(values: tuple[Any, ...], own: dict[Unit, int]) -> RankRow:
    rank, devices, lo, hi, span, comp, comm, memcpy, memset, idle, overlap, pct, device = values
    unit = (rank, None) if device is None else (None, device)
    return RankRow(
        rank=rank, devices=devices, start_ns=lo, end_ns=hi, span_ns=span, compute_ns=comp,
        communication_ns=comm, memcpy_ns=memcpy, memset_ns=memset, idle_ns=idle,
        comm_compute_overlap_ns=overlap, comm_compute_overlap_pct=pct,
        collective_wait_ns=own.get(unit, 0),
    )  # fmt: skip


def compute_ranks(*, session: Session, trace_id: str) -> RanksPublic:
    """Every rank's split of its GPU span, overlap and wait; the stragglers.

    Raises:
        NotFoundError: no such trace. InvalidInputError: it is not ready.
    """
    trace = ready(session, trace_id)
    own, caused = _waits(collective_instances(trace))
    rows = [_row(values, own) for values in query_derived(trace, _SQL)]
    world = len(rows) if len(rows) > 1 else sum(r.rank is not None for r in rows)
    return RanksPublic(
        trace_id=trace_id, world_size=world, items=rows, stragglers=_stragglers(rows, caused),
        rule=RANK_RULE,
    )  # fmt: skip
