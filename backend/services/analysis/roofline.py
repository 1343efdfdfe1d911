"""Roofline points and roofs of one trace.

Measured points come from kernel args that the Nsight Compute and rocprof-compute parsers
set (`flops_fp64`, `flops_fp32`, `flops_fp16`, `flops_tensor`, `dram_bytes`). A torch
trace has no counters, so its points are estimates from the shapes of the ops that
launched the kernels (`op_flops`), labelled as such. Roofs come from peaks the parser put
in the device's properties (`peak_flops_<precision>`, `peak_dram_bytes_per_s`), else from
the spec table in `gpu_specs`.

Public surface: `compute_roofline`.
"""

from collections import OrderedDict, defaultdict
from datetime import datetime
from typing import Any

import orjson
from sqlmodel import Session

from backend.models import Trace
from backend.models.analyses import Roof, RooflineDevice, RooflinePoint, RooflinePublic
from backend.models.ncu_sections import NcuHierarchy
from backend.services.analysis.gpu_specs import lookup_spec
from backend.services.analysis.ncu_memory import memory_hierarchy
from backend.services.analysis.op_flops import ESTIMATED_OPS, estimate_op
from backend.services.analysis.stored import json_int, read_events
from backend.services.traces import get_trace

MEASURED_KEYS = ("flops_fp64", "flops_fp32", "flops_fp16", "flops_tensor")
# The roof a point is judged against: its own precision's roof if the device has one
# (ncu's `fp16` is the non-tensor half-precision pipe), else these, most specific first.
# Estimated bf16/fp16 points are matmuls, which run on tensor cores.
ROOF_FALLBACK = {
    "tf32": ("tf32_tensor", "tensor", "fp32"),
    "fp16": ("fp16_tensor", "tensor"),
    "bf16": ("fp16_tensor", "tensor", "fp16"),
    "fp8": ("fp8_tensor", "tensor", "fp16_tensor"),
    "tensor": ("fp16_tensor",),
}
EXTERNAL_ID_KEYS = ("External id", "external id")
PointKey = tuple[str, str | None, int | None, str]


class _Acc:
    """Running sums of one point."""

    __slots__ = ("bytes", "count", "flops", "hits", "level_ns", "time_ns")

    def __init__(self) -> None:
        self.count, self.time_ns, self.flops, self.bytes = 0, 0, 0.0, 0.0
        self.hits: dict[str, list[float]] = {}  # L1/L2: [hit % x time, time]
        self.level_ns: dict[str, float] = {}  # memory level: time at its peak bandwidth

    def add_hierarchy(self, h: NcuHierarchy | None, time_ns: int, launches: int) -> None:
        """One launch's hit rates (time-weighted into the point's) and level times."""
        if h is None:
            return
        for level, pct in (("L1", h.l1_hit_pct), ("L2", h.l2_hit_pct)):
            if pct is not None:
                acc = self.hits.setdefault(level, [0.0, 0.0])
                acc[0] += pct * time_ns * launches
                acc[1] += time_ns * launches
        for lv in h.levels:
            if lv.time_ns is not None:
                self.level_ns[lv.level] = self.level_ns.get(lv.level, 0.0) + lv.time_ns * launches

    def hit_pct(self, level: str) -> float | None:
        acc = self.hits.get(level)
        return acc[0] / acc[1] if acc and acc[1] else None

    def bound_level(self) -> str | None:
        ns = self.level_ns
        return max(ns, key=ns.__getitem__) if len(ns) > 1 else None

    def add(self, time_ns: int, flops: float, nbytes: float, launches: int = 1) -> None:
        """One event that stands for `launches` launches of these numbers each."""
        self.count += launches
        self.time_ns += time_ns * launches
        self.flops += flops * launches
        self.bytes += nbytes * launches


def _device_roofs(devices: list[dict[str, Any]]) -> list[RooflineDevice]:
    """Peaks the trace itself recorded win over the datasheet table."""
    out = []
    for d in devices:
        index, name = int(d.get("index", 0)), str(d.get("name") or "")
        measured = {
            k.removeprefix("peak_flops_"): float(v)
            for k, v in d.items()
            if k.startswith("peak_flops_") and isinstance(v, int | float) and v > 0
        }
        bw = d.get("peak_dram_bytes_per_s")
        if measured or isinstance(bw, int | float):
            roofs = [Roof(precision=p, peak_flops_per_s=f) for p, f in sorted(measured.items())]
            bw_value = float(bw) if isinstance(bw, int | float) else None
            out.append(
                RooflineDevice(
                    index=index,
                    name=name,
                    peak_dram_bytes_per_s=bw_value,
                    roofs=roofs,
                    source=str(d.get("peak_source") or "measured peaks in the trace"),
                )
            )
            continue
        sms = d.get("numSms")
        spec = lookup_spec(name, sms if isinstance(sms, int) else None)
        if spec is not None:
            roofs = [Roof(precision=p, peak_flops_per_s=f) for p, f in spec.peak_flops.items()]
            out.append(RooflineDevice(index=index, name=name or spec.name,
                                      peak_dram_bytes_per_s=spec.peak_dram_bytes_per_s,
                                      roofs=roofs, source=f"datasheet: {spec.name}",
                                      source_url=spec.source))  # fmt: skip
    return out


def _bound(
    precision: str, intensity: float, device: int | None, roofs: list[RooflineDevice]
) -> str | None:
    """Memory- or compute-bound: left or right of the ridge of the point's own roof."""
    dev = next((d for d in roofs if d.index == device), roofs[0] if len(roofs) == 1 else None)
    if dev is None or not dev.peak_dram_bytes_per_s:
        return None
    peaks = {r.precision: r.peak_flops_per_s for r in dev.roofs}
    keys = (precision, *ROOF_FALLBACK.get(precision, ()))
    peak = next((peaks[k] for k in keys if k in peaks), None)
    if peak is None:
        return None
    return "memory" if intensity < peak / dev.peak_dram_bytes_per_s else "compute"


def _measured(trace: Trace) -> dict[PointKey, _Acc]:
    """One point per (kernel, device, precision) from counter args; {} for traces without."""
    sql = (
        "SELECT name, dur_ns, device, args FROM {events} WHERE kind = 'kernel' "
        "AND TRY_CAST(args ->> '$.dram_bytes' AS DOUBLE) IS NOT NULL ORDER BY id"
    )
    points: dict[PointKey, _Acc] = defaultdict(_Acc)
    for name, dur, device, text in read_events(trace, sql):
        args = orjson.loads(text)
        by_kind = {k: float((args or {}).get(k) or 0) for k in MEASURED_KEYS}
        flops = sum(by_kind.values())
        if flops <= 0 or not args:
            continue
        precision = max(by_kind, key=by_kind.__getitem__).removeprefix("flops_")
        point = points[(name, None, device, precision)]
        point.add(dur, flops, float(args["dram_bytes"]), _launches(args))
        point.add_hierarchy(memory_hierarchy(args, float(dur)), dur, _launches(args))
    return points


def _launches(args: dict[str, Any]) -> int:
    """How many launches an event stands for: an Nsight Compute summary row's
    `invocations` (its numbers are per-launch averages), else 1."""
    n = args.get("invocations")
    return n if isinstance(n, int) and n > 0 else 1


def _external_id(args: dict[str, Any] | None) -> Any:
    return next((args[k] for k in EXTERNAL_ID_KEYS if k in args), None) if args else None


def _estimated(trace: Trace) -> dict[PointKey, _Acc]:
    """One point per (dominant kernel, op, device, precision), from each op call's shapes.

    External ids number one process's ops and kernels, so every rank of a multi-rank
    trace has the same ones: an op and its kernels are matched within their rank."""
    sql = (
        "SELECT rank, name, args FROM {events} WHERE kind = 'cpu_op' "
        "AND name IN (SELECT unnest(?)) ORDER BY id"
    )
    costs = {}
    for rank, name, text in read_events(trace, sql, [sorted(ESTIMATED_OPS)]):
        args = orjson.loads(text) if text is not None else None
        cost, ext = estimate_op(name, args), _external_id(args)
        if cost is not None and isinstance(ext, int):
            costs[(rank, ext)] = (name, cost)
    if not costs:
        return {}
    # Each op's kernels, grouped in the engine, so 100k kernels' args are never decoded here:
    # the longest kernel (the first in id order of equals) names the point, and the groups
    # come in the order of their first kernel.
    ext_id = f"coalesce({json_int('External id')}, {json_int('external id')})"
    sql = (
        "SELECT rank, ext, first(name ORDER BY dur_ns DESC, id), "
        "first(device ORDER BY dur_ns DESC, id), sum(dur_ns) "
        f"FROM (SELECT id, rank, name, dur_ns, device, {ext_id} AS ext FROM {{events}} "
        "WHERE kind = 'kernel') WHERE ext IN (SELECT unnest(?)) GROUP BY rank, ext "
        "ORDER BY min(id)"
    )
    points: dict[PointKey, _Acc] = defaultdict(_Acc)
    for rank, ext, name, device, time_ns in read_events(
        trace, sql, [sorted({e for _, e in costs})]
    ):
        if (rank, ext) not in costs:  # another rank's op has this id, this rank's none
            continue
        op, cost = costs[(rank, ext)]
        points[(name, op, device, cost.precision)].add(int(time_ns), cost.flops, cost.bytes)
    return points


def _points(
    accs: dict[PointKey, _Acc],
    total_ns: int,
    roofs: list[RooflineDevice],
    estimated: bool,
) -> list[RooflinePoint]:
    out = []
    for (name, op, device, precision), a in accs.items():
        if a.time_ns <= 0 or a.bytes <= 0:
            continue
        intensity, rate = a.flops / a.bytes, a.flops / (a.time_ns / 1e9)
        out.append(RooflinePoint(
            name=name, op=op, device=device, precision=precision, count=a.count,
            time_ns=a.time_ns, time_share=a.time_ns / total_ns if total_ns else 0.0,
            flops=a.flops, bytes=a.bytes, intensity=intensity, flops_per_s=rate,
            bound=_bound(precision, intensity, device, roofs), estimated=estimated,
            l1_hit_pct=a.hit_pct("L1"), l2_hit_pct=a.hit_pct("L2"),
            memory_bound_level=a.bound_level(),
        ))  # fmt: skip
    out.sort(key=lambda p: -p.time_ns)
    return out


def _note(kind: str, trace: Trace, roofs: list[RooflineDevice]) -> str:
    if kind == "measured":
        text = "Measured: FLOPs and DRAM bytes from the profiler's hardware counters."
    elif kind == "estimated":
        text = ("Estimated: FLOPs from the shapes of matmul, convolution and attention ops "
                "(record_shapes=True) and bytes from their tensor sizes; other kernels are "
                "not plotted.")  # fmt: skip
    elif trace.format == "torch_profiler":
        text = ("No points: no matmul, convolution or attention op with recorded shapes "
                "launched a kernel. Profile with record_shapes=True, or use Nsight Compute "
                "for measured points.")  # fmt: skip
    else:
        text = "No points: this trace has no FLOP or DRAM-byte counters."
    if not roofs:
        text += " No peak FLOP/s or bandwidth is known for this device, so no roofs are drawn."
    return text


def compute_roofline(
    *, session: Session, trace_id: str, with_points: bool = True
) -> RooflinePublic:
    """The roofline of one trace: roofs per device and one point per kernel.

    Args:
        session: database session.
        trace_id: the trace.
        with_points: False answers the roofs alone, without reading any event.

    Raises:
        NotFoundError: no such trace.
    """
    trace = get_trace(session=session, trace_id=trace_id)
    key = (trace_id, trace.status, trace.updated_at)
    if with_points and (cached := _CACHE.get(key)) is not None:
        _CACHE.move_to_end(key)
        return cached
    if not with_points:
        roofs = _device_roofs(trace.devices)
        return RooflinePublic(trace_id=trace_id, kind="none", note=_note("none", trace, roofs),
                              devices=roofs, points=[], covered_time_share=0.0)  # fmt: skip
    sql = (
        f"SELECT coalesce(sum(dur_ns * coalesce({json_int('invocations')}, 1)), 0) "
        "FROM {events} WHERE kind = 'kernel'"
    )
    total_ns = int(next(iter(read_events(trace, sql)), (0,))[0])
    roofs = _device_roofs(trace.devices)
    accs, estimated = _measured(trace), False
    if not accs:
        accs, estimated = _estimated(trace), True
    points = _points(accs, total_ns, roofs, estimated)
    kind = "none" if not points else "estimated" if estimated else "measured"
    covered = sum(p.time_ns for p in points) / total_ns if total_ns else 0.0
    result = RooflinePublic(trace_id=trace_id, kind=kind, note=_note(kind, trace, roofs),
                            devices=roofs, points=points, covered_time_share=covered)  # fmt: skip
    _CACHE[key] = result
    while len(_CACHE) > CACHE_SIZE:
        _CACHE.popitem(last=False)
    return result


# A trace's points change only when it is ingested again, which moves `updated_at`; the
# points read every kernel and CPU op of the trace's dataset, so keep a few.
CACHE_SIZE = 32
_CACHE: OrderedDict[tuple[str, str, datetime], RooflinePublic] = OrderedDict()
