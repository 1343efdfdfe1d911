"""Collectives by type and message size: count, time, bandwidth, and time spent waiting.

Instances: the n-th communication kernel named N on each rank (by start, then id) is one
collective instance, the rule of the timeline's collective flows (it holds for ranks of one
process group profiled over the same steps). A rank's wait in an instance is the latest
start among its ranks minus its own start: NCCL kernels start, then spin until their peers
arrive.

Sizes come from Kineto's `record_param_comms` args (`Collective name`, `In msg nelems`,
`Out msg nelems`, `dtype`, `Group size`): the message size S is the larger of the input
and output message, as nccl-tests counts it (all_gather: the gathered output; reduce_scatter:
the full input). Algorithm and protocol are read from the kernel name
(`ncclDevKernel_AllReduce_Sum_f32_RING_LL`). Bandwidths follow nccl-tests' PERFORMANCE.md
(NVIDIA/nccl-tests, doc/PERFORMANCE.md): algbw = S / t, busbw = algbw x factor with
factor 2(n-1)/n for all_reduce, (n-1)/n for all_gather, reduce_scatter and all_to_all, 1
for broadcast, reduce and send/recv. t is the kernel's mean duration, which includes the
wait, so busbw here is a lower bound when ranks arrive apart.

Traces without ranks (an nsys report of several processes) are keyed by device instead.

Public surface: `compute_collectives`, `Instances`, `collective_instances`, `busbw_factor`,
`Unit`.
"""

import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import orjson
from sqlmodel import Session

from backend.models import Trace
from backend.models.ranks import CollectiveRow, CollectivesPublic
from backend.services.analysis.derived import query_derived
from backend.services.analysis.gpu_work import ready
from ingest.summary.comm import DTYPE_BYTES, collective_of

COLLECTIVE_RULE = (
    "instance = n-th kernel of one name on each rank; wait = latest start of the instance "
    "minus this rank's start; S = max(in, out) msg nelems x dtype size; algbw = S / mean "
    "kernel time; busbw = algbw x nccl-tests factor (all_reduce 2(n-1)/n; all_gather, "
    "reduce_scatter, all_to_all (n-1)/n; broadcast, reduce, send/recv 1)"
)
_ALGO = re.compile(r"_(RING|TREE|COLLNET_DIRECT|COLLNET_CHAIN|COLLNET|NVLS_TREE|NVLS|PAT)_"
                   r"(LL128|LL|SIMPLE)(?=_|\(|$)", re.IGNORECASE)  # fmt: skip
Unit = tuple[int | None, int | None]  # (rank, None), or (None, device) without ranks
# The parts' communication kernels (`comm_derive`), in start order over the whole trace.
_SQL = "SELECT rank, device, name, start_ns, dur_ns, args FROM {comm_kernels} ORDER BY start_ns, id"


def busbw_factor(collective: str, n: int | None) -> float | None:
    """nccl-tests' bus bandwidth factor for a collective over n ranks, or None.

    >>> busbw_factor("allreduce", 2), busbw_factor("all_gather", 4), busbw_factor("broadcast", 8)
    (1.0, 0.75, 1.0)
    """
    if not n or n < 1:
        return None
    key = collective.lower().replace("_", "").removesuffix("base")
    if key.startswith("allreduce"):
        return 2 * (n - 1) / n
    if key.startswith(("allgather", "reducescatter", "alltoall")):
        return (n - 1) / n
    if key.startswith(("broadcast", "reduce", "send", "recv")):
        return 1.0
    return None


@dataclass(frozen=True, slots=True)
class Kernel:
    """One communication kernel and what its name and args say."""

    rank: int | None
    device: int | None
    name: str
    start_ns: int
    dur_ns: int
    collective: str
    msg_bytes: int | None
    dtype: str | None
    group_size: int | None
    algorithm: str | None
    protocol: str | None

    @property
    def unit(self) -> Unit:
        """Who ran it: (rank, None), or (None, device) in traces without ranks."""
        return (self.rank, None) if self.rank is not None else (None, self.device)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _kernel(rank: int | None, device: int | None, name: str, start: int, dur: int,
            raw: str | None) -> Kernel:  # fmt: skip
    args: dict[str, Any] = orjson.loads(raw) if raw else {}
    dtype = args.get("dtype") if isinstance(args.get("dtype"), str) else None
    nelems = [n for n in (_int(args.get("In msg nelems")), _int(args.get("Out msg nelems")))
              if n is not None]  # fmt: skip
    size = DTYPE_BYTES.get(dtype or "")
    algo = _ALGO.search(name)
    return Kernel(
        rank=rank, device=device, name=name, start_ns=start, dur_ns=dur,
        collective=str(args.get("Collective name") or collective_of(name) or name),
        msg_bytes=max(nelems) * size if nelems and size else None,
        dtype=dtype, group_size=_int(args.get("Group size")),
        algorithm=algo.group(1).upper() if algo else None,
        protocol=algo.group(2).upper() if algo else None,
    )  # fmt: skip


@dataclass
class Instances:
    """Communication kernels with their wait (ns) and how many instances matched."""

    kernels: list[Kernel]
    wait_ns: list[int]
    instance: list[int]  # each kernel's instance number; -1 when it matched no peer
    matched: int
    unmatched: int


def collective_instances(trace: Trace) -> Instances:
    """Every communication kernel, paired across ranks by name and ordinal, with its wait."""
    kernels = [_kernel(*row) for row in query_derived(trace, _SQL)]
    groups: dict[tuple[str, int], list[int]] = defaultdict(list)
    seen: dict[tuple[Unit, str], int] = defaultdict(int)
    for i, k in enumerate(kernels):  # rows come by start
        n = seen[(k.unit, k.name)]
        seen[(k.unit, k.name)] = n + 1
        groups[(k.name, n)].append(i)
    units = {k.unit for k in kernels}
    wait = [0] * len(kernels)
    instance = [-1] * len(kernels)
    matched = unmatched = 0
    for members in groups.values():
        if len({kernels[i].unit for i in members}) < 2:
            unmatched += len(members) if len(units) > 1 else 0
            continue
        latest = max(kernels[i].start_ns for i in members)
        for i in members:
            wait[i] = latest - kernels[i].start_ns
            instance[i] = matched
        matched += 1
    return Instances(kernels, wait, instance, matched, unmatched)


def compute_collectives(*, session: Session, trace_id: str) -> CollectivesPublic:
    """Collectives by type, message size, dtype, group size, algorithm and protocol.

    Raises:
        NotFoundError: no such trace. InvalidInputError: it is not ready.
    """
    found = collective_instances(ready(session, trace_id))
    world = len({k.unit for k in found.kernels})
    rows: dict[tuple[Any, ...], list[Any]] = {}
    for k, wait in zip(found.kernels, found.wait_ns, strict=True):
        key = (k.collective, k.msg_bytes, k.dtype, k.group_size, k.algorithm, k.protocol)
        row = rows.setdefault(key, [0, 0, 0, set()])
        row[0] += 1
        row[1] += k.dur_ns
        row[2] += wait
        row[3].add(k.unit)
    items = [_row(key, row[0], row[1], row[2], row[3], world) for key, row in rows.items()]
    items.sort(key=lambda r: (-r.total_ns, r.collective, r.msg_bytes or 0))
    return CollectivesPublic(
        trace_id=trace_id, items=items, matched_instances=found.matched,
        unmatched_kernels=found.unmatched, rule=COLLECTIVE_RULE,
    )  # fmt: skip


def _row(key: tuple[Any, ...], count: int, total: int, wait: int, ranks: set[Any],
         world: int) -> CollectiveRow:  # fmt: skip
    collective, size, dtype, group, algo, proto = key
    factor = busbw_factor(collective, group or (world if world > 1 else None))
    algbw = round(size * count / total, 3) if size and total else None  # bytes/ns = GB/s
    return CollectiveRow(
        collective=collective, msg_bytes=size, dtype=dtype, group_size=group,
        algorithm=algo, protocol=proto, count=count, ranks=len(ranks), total_ns=total,
        avg_ns=total // count, algbw_gbps=algbw, busbw_factor=factor,
        busbw_gbps=round(algbw * factor, 3) if algbw is not None and factor else None,
        wait_ns=wait,
    )  # fmt: skip
