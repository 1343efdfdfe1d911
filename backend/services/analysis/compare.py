"""Trace A against trace B: headline deltas and per-kernel deltas.

Kernels are matched in two passes: first by `exact_key` (the same instantiation, whatever
tool printed it), then the rest by `base_key`, so a torch trace's full demangled name
meets an nsys or ncu short name. A base name that matches several names on one side is
compared as their sum. What is left is new (only in B) or gone (only in A).

Public surface: `compute_compare`, `match_kernels`, `KernelTotals`.
"""

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from sqlmodel import Session, col, select

from backend.models import KernelStatRecord, Trace
from backend.models.trace_views import ComparePublic, KernelDelta, MetricDelta
from backend.services.analysis import summary_view as sv
from backend.services.analysis.compare_report import render_markdown
from backend.services.analysis.kernel_names import base_key, exact_key
from backend.services.traces import get_trace


@dataclass(slots=True)
class KernelTotals:
    """Count and total time of one or more kernel names that compare as one."""

    names: list[str] = field(default_factory=list)
    count: int = 0
    total_ns: int = 0

    def add(self, other: "KernelTotals") -> None:
        self.names += other.names
        self.count += other.count
        self.total_ns += other.total_ns


def _group(
    kernels: Iterable[tuple[str, int, int]], key: Callable[[str], str]
) -> dict[str, KernelTotals]:
    out: dict[str, KernelTotals] = defaultdict(KernelTotals)
    for name, count, total in kernels:
        out[key(name)].add(KernelTotals([name], count, total))
    return out


def _regroup(groups: dict[str, KernelTotals], keys: Iterable[str]) -> dict[str, KernelTotals]:
    out: dict[str, KernelTotals] = defaultdict(KernelTotals)
    for k in keys:
        out[base_key(k)].add(groups[k])
    return out


def _delta(key: str, a: KernelTotals, b: KernelTotals, status: str) -> KernelDelta:
    names = b.names or a.names
    name = names[0] if len(set(names)) == 1 else key
    delta = b.total_ns - a.total_ns
    pct = round(100.0 * delta / a.total_ns, 3) if a.total_ns else None
    return KernelDelta(name=name, key=key, count_a=a.count, count_b=b.count,
                       total_ns_a=a.total_ns, total_ns_b=b.total_ns, delta_ns=delta,
                       delta_pct=pct, status=status)  # fmt: skip


def match_kernels(
    a: Iterable[tuple[str, int, int]], b: Iterable[tuple[str, int, int]]
) -> tuple[list[KernelDelta], list[KernelDelta], list[KernelDelta]]:
    """Match (name, count, total_ns) rows of A and B.

    Returns:
        (matched, new in B, gone from A), each sorted by absolute time impact.
    """
    ea, eb = _group(a, exact_key), _group(b, exact_key)
    matched = [_delta(k, ea[k], eb[k], "changed") for k in ea.keys() & eb.keys()]
    ba, bb = _regroup(ea, ea.keys() - eb.keys()), _regroup(eb, eb.keys() - ea.keys())
    matched += [_delta(k, ba[k], bb[k], "changed") for k in ba.keys() & bb.keys()]
    new = [_delta(k, KernelTotals(), bb[k], "new") for k in bb.keys() - ba.keys()]
    gone = [_delta(k, ba[k], KernelTotals(), "gone") for k in ba.keys() - bb.keys()]
    for rows in (matched, new, gone):
        rows.sort(key=lambda d: (-abs(d.delta_ns), -max(d.total_ns_a, d.total_ns_b), d.key))
    return matched, new, gone


def _metric(metric: str, label: str, unit: str, a: float | None, b: float | None) -> MetricDelta:
    delta = b - a if a is not None and b is not None else None
    pct = round(100.0 * delta / a, 3) if delta is not None and a else None
    return MetricDelta(metric=metric, label=label, unit=unit, a=a, b=b, delta=delta,
                       delta_pct=pct)  # fmt: skip


def _per_step_kernel_ns(trace: Trace) -> float | None:
    total = sv.number(trace.summary, "gpu", "kernel_ns")
    steps = sv.step_count(trace.summary)
    return total / steps if total is not None and steps else total


def _throughput(trace: Trace, tokens_per_step: float | None) -> float | None:
    step = sv.step_time_ns(trace.summary)
    return tokens_per_step / (step / 1e9) if tokens_per_step and step else None


def _metrics(a: Trace, b: Trace, tokens_per_step: float | None) -> list[MetricDelta]:
    ta, tb = sv.gpu_time(a.summary), sv.gpu_time(b.summary)

    def pct(key: str) -> tuple[float | None, float | None]:
        return sv.number(ta, key), sv.number(tb, key)

    return [
        _metric("step_time_ns", "Step time", "ns",
                sv.step_time_ns(a.summary), sv.step_time_ns(b.summary)),
        _metric("throughput_tokens_per_s", "Throughput", "tokens/s",
                _throughput(a, tokens_per_step), _throughput(b, tokens_per_step)),
        _metric("peak_memory_bytes", "Peak memory", "bytes",
                sv.peak_memory_bytes(a.summary), sv.peak_memory_bytes(b.summary)),
        _metric("gpu_kernel_ns_per_step", "GPU kernel time per step", "ns",
                _per_step_kernel_ns(a), _per_step_kernel_ns(b)),
        _metric("gpu_idle_pct", "GPU idle", "%", *pct("idle_pct")),
        _metric("comm_compute_overlap_pct", "Comm/compute overlap", "%",
                *pct("comm_compute_overlap_pct")),
        _metric("copy_compute_overlap_pct", "H2D/D2H copy/compute overlap", "%",
                *pct("copy_compute_overlap_pct")),
    ]  # fmt: skip


def _kernel_rows(session: Session, trace_id: str) -> list[tuple[str, int, int]]:
    rows = session.exec(
        select(KernelStatRecord.name, KernelStatRecord.count, KernelStatRecord.total_ns)
        .where(KernelStatRecord.trace_id == trace_id)
        .order_by(col(KernelStatRecord.rank))
    )
    return [(n, c, t) for n, c, t in rows]


def compute_compare(
    *, session: Session, a_id: str, b_id: str, tokens_per_step: float | None = None
) -> ComparePublic:
    """Compare two traces; B is the "after" of an optimisation.

    Raises:
        NotFoundError: either trace does not exist.
    """
    a, b = get_trace(session=session, trace_id=a_id), get_trace(session=session, trace_id=b_id)
    matched, new, gone = match_kernels(_kernel_rows(session, a_id), _kernel_rows(session, b_id))
    metrics = _metrics(a, b, tokens_per_step)
    report = render_markdown(a.name, b.name, metrics, matched, new, gone)
    return ComparePublic(a=a_id, b=b_id, a_name=a.name, b_name=b.name, metrics=metrics,
                         kernels=matched, new_kernels=new, gone_kernels=gone,
                         markdown=report)  # fmt: skip
