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

Public surface: `compute_ranks`, `STRAGGLER_PCT`.
"""

from statistics import median

from sqlmodel import Session

from backend.models.ranks import RankRow, RanksPublic, Straggler
from backend.services.analysis.collectives import Instances, Unit, collective_instances
from backend.services.analysis.gpu_work import (
    NO_RANK,
    GpuWork,
    load_gpu_work,
    ready,
    split_window,
)

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


def _units(work: GpuWork) -> list[tuple[Unit, GpuWork]]:
    """Each rank's work; without ranks, each device's when there are several."""
    out: list[tuple[Unit, GpuWork]] = []
    for code in sorted(set(work.rank.tolist())):
        rank = None if code == NO_RANK else code
        mine = work.of(rank)
        if rank is None and len(mine.devices()) > 1:
            out.extend(((None, d), mine.of(None, d)) for d in mine.devices())
        else:
            out.append(((rank, None), mine))
    return out


def _row(unit: Unit, mine: GpuWork, own: dict[Unit, int]) -> RankRow:
    lo, hi = int(mine.start.min()), int(mine.end.max())
    split = split_window(mine, lo, hi)
    ex = split["exclusive"]
    return RankRow(
        rank=unit[0], devices=[d for d in mine.devices() if d >= 0], start_ns=lo, end_ns=hi,
        span_ns=split["span_ns"], compute_ns=ex["compute_ns"],
        communication_ns=ex["communication_ns"], memcpy_ns=ex["memcpy_ns"],
        memset_ns=ex["memset_ns"], idle_ns=ex["idle_ns"],
        comm_compute_overlap_ns=split["comm_compute_overlap_ns"],
        comm_compute_overlap_pct=split["comm_compute_overlap_pct"],
        collective_wait_ns=own.get(unit, 0),
    )  # fmt: skip


def compute_ranks(*, session: Session, trace_id: str) -> RanksPublic:
    """Every rank's split of its GPU span, overlap and wait; the stragglers.

    Raises:
        NotFoundError: no such trace. InvalidInputError: it is not ready.
    """
    trace = ready(session, trace_id)
    work = load_gpu_work(trace)
    own, caused = _waits(collective_instances(trace))
    rows = [_row(unit, mine, own) for unit, mine in _units(work)]
    world = len(rows) if len(rows) > 1 else sum(r.rank is not None for r in rows)
    return RanksPublic(
        trace_id=trace_id, world_size=world, items=rows, stragglers=_stragglers(rows, caused),
        rule=RANK_RULE,
    )  # fmt: skip
