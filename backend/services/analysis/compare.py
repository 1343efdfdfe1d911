"""Trace A against trace B, per step: headline, metrics, time categories and kernel rows.

Traces of different lengths are compared per step: each trace's totals are divided by its
own step count (`summary_view.step_count`, the one reader of steps). When either trace has
no steps nothing is divided by a made-up count: kernel rows then compare each kernel's share
of kernel time, categories their share of the GPU span, and `basis_note` says so. The
headline is the largest |delta| among kernel rows, categories, idle and overlaps, in the
same basis and with the same numbers as the charts draw.

Public surface: `compute_compare`, `kernel_deltas`, `category_deltas`, `headline`.
"""

from collections.abc import Iterable, Sequence
from typing import Any

from sqlmodel import Session, col, select

from backend.models import KernelStatRecord, Trace
from backend.models.analyses import (
    CategoryDelta,
    ComparePublic,
    HeadlineItem,
    KernelDelta,
    MetricDelta,
)
from backend.models.kernel_stats import KernelGroupStatRecord
from backend.services.analysis import summary_view as sv
from backend.services.analysis.compare_kernels import KernelMatch, KernelRow, match_kernels
from backend.services.analysis.compare_report import render_markdown
from backend.services.traces import get_trace

PER_STEP, SHARE = "per_step", "share"
HEADLINE_ITEMS = 5
# (category, label, kind, path under the summary's gpu.time, higher is better). Categories
# are unions (the time any kernel of the kind ran), so the overlaps say how much of them
# ran at once; idle is the span's rest.
_CATEGORIES = (
    ("compute", "Compute", "category", ("compute_ns",), False),
    ("communication", "Communication", "category", ("communication_ns",), False),
    ("memcpy", "Memcpy", "category", ("memcpy_ns",), False),
    ("memset", "Memset", "category", ("memset_ns",), False),
    ("idle", "GPU idle", "idle", ("idle_ns",), False),
    ("comm_compute_overlap", "Comm/compute overlap", "overlap",
     ("comm_compute_overlap_ns",), True),
    ("copy_compute_overlap", "Copy/compute overlap", "overlap",
     ("copy_compute_overlap_ns",), True),
)  # fmt: skip


def _pct_change(a: float | None, b: float | None) -> float | None:
    return round(100.0 * (b - a) / a, 3) if a and b is not None else None


def _scale(part: float, whole: float | None) -> float | None:
    """`part` per step (whole = steps) or in percent of a total (whole = total / 100)."""
    return part / whole if whole else None


def _better(delta: float | None, higher_is_better: bool) -> bool | None:
    return None if not delta else (delta > 0) == higher_is_better


def kernel_deltas(
    matches: Iterable[KernelMatch], whole_a: float | None, whole_b: float | None, basis: str
) -> list[KernelDelta]:
    """Rows in the basis (total / whole: steps, or kernel time / 100), largest |delta| first."""
    rows = []
    for m in matches:
        a = _scale(m.a.total_ns, whole_a) or 0.0
        b = _scale(m.b.total_ns, whole_b) or 0.0
        row = KernelDelta(
            name=m.name, key=m.key, match=m.match, names_a=m.a.names, names_b=m.b.names,
            op=m.op, count_a=m.a.count, count_b=m.b.count, total_ns_a=m.a.total_ns,
            total_ns_b=m.b.total_ns, a=a, b=b, delta=b - a,
            delta_pct=_pct_change(a, b) if m.a.names else None,
            better=None if basis == SHARE else _better(b - a, False), status=m.status,
        )  # fmt: skip
        rows.append(row)
    rows.sort(key=lambda d: (-abs(d.delta), -max(d.a, d.b), d.key))
    return rows


def category_deltas(
    time_a: dict[str, Any],
    time_b: dict[str, Any],
    whole_a: float | None,
    whole_b: float | None,
    basis: str,
) -> list[CategoryDelta]:
    """Time categories and overlaps of the summaries' GPU time split, in the basis."""
    out = []
    for category, label, kind, path, higher in _CATEGORIES:
        va, vb = sv.number(time_a, *path), sv.number(time_b, *path)
        a = _scale(va, whole_a) if va is not None else None
        b = _scale(vb, whole_b) if vb is not None else None
        delta = b - a if a is not None and b is not None else None
        neutral = basis == SHARE and kind == "category"  # one share grows as another shrinks
        better = None if neutral else _better(delta, higher)
        out.append(CategoryDelta(category=category, label=label, kind=kind, a=a, b=b,
                                 delta=delta, delta_pct=_pct_change(a, b),
                                 better=better))  # fmt: skip
    return out


def headline(
    basis: str, kernels: Sequence[KernelDelta], categories: Sequence[CategoryDelta]
) -> list[HeadlineItem]:
    """The biggest changes of either kind, largest |delta| first: the charts' own rows."""
    share = basis == SHARE
    items = [
        HeadlineItem(
            kind="kernel",
            key=k.key,
            label=k.name,
            unit="% of kernel time" if share else "ns/step",
            a=k.a,
            b=k.b,
            delta=k.delta,
            delta_pct=k.delta_pct,
            better=k.better,
            status=k.status,
            match=k.match,
        )
        for k in kernels
        if k.delta
    ]
    items += [
        HeadlineItem(
            kind=c.kind,
            key=c.category,
            label=c.label,
            unit="% of GPU span" if share else "ns/step",
            a=c.a,
            b=c.b,
            delta=c.delta,
            delta_pct=c.delta_pct,
            better=c.better,
        )
        for c in categories
        if c.delta and c.a is not None and c.b is not None
    ]
    items.sort(key=lambda i: (-abs(i.delta), i.kind, i.key))
    return items[:HEADLINE_ITEMS]


def _metric(metric: str, label: str, unit: str, a: float | None, b: float | None) -> MetricDelta:
    delta = b - a if a is not None and b is not None else None
    return MetricDelta(metric=metric, label=label, unit=unit, a=a, b=b, delta=delta,
                       delta_pct=_pct_change(a, b) if delta is not None else None)  # fmt: skip


def _throughput(trace: Trace, tokens_per_step: float | None) -> float | None:
    step = sv.step_time_ns(trace.summary)
    return tokens_per_step / (step / 1e9) if tokens_per_step and step else None


def _metrics(
    a: Trace, b: Trace, steps: tuple[int, int], tokens_per_step: float | None
) -> list[MetricDelta]:
    ta, tb = sv.gpu_time(a.summary), sv.gpu_time(b.summary)
    ka, kb = sv.number(a.summary, "gpu", "kernel_ns"), sv.number(b.summary, "gpu", "kernel_ns")

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
                _scale(ka, steps[0]) if ka is not None else None,
                _scale(kb, steps[1]) if kb is not None else None),
        _metric("gpu_idle_pct", "GPU idle", "%", *pct("idle_pct")),
        _metric("comm_compute_overlap_pct", "Comm/compute overlap", "%",
                *pct("comm_compute_overlap_pct")),
        _metric("copy_compute_overlap_pct", "H2D/D2H copy/compute overlap", "%",
                *pct("copy_compute_overlap_pct")),
    ]  # fmt: skip


def basis_note(steps_a: int, steps_b: int) -> str:
    """The basis in words: per step with the counts, or why shares instead."""
    if steps_a and steps_b:
        return (
            f"Per step: each trace's totals divided by its own step count "
            f"(A: {steps_a:,} steps, B: {steps_b:,} steps)."
        )
    missing = "A and B have" if not (steps_a or steps_b) else "A has" if not steps_a else "B has"
    return (
        f"Shares, not per step: {missing} no steps, so kernel rows compare each kernel's share "
        f"of kernel time and categories their share of the GPU span; raw totals of traces of "
        f"different lengths are not compared."
    )


def _hundredth(whole: list[KernelRow] | dict[str, Any]) -> float | None:
    """1% of a trace's kernel time (its kernel rows) or of its GPU span (its time split)."""
    total = sum(r[2] for r in whole) if isinstance(whole, list) else sv.number(whole, "span_ns")
    return total / 100 if total else None


def _kernel_rows(session: Session, trace_id: str) -> list[KernelRow]:
    rows = session.exec(
        select(KernelStatRecord.name, KernelStatRecord.count, KernelStatRecord.total_ns)
        .where(KernelStatRecord.trace_id == trace_id)
        .order_by(col(KernelStatRecord.rank))
    )
    return [(n, c, t) for n, c, t in rows]


def _launching_ops(session: Session, trace_id: str) -> dict[str, str]:
    """Kernel name -> the CPU op that spent the most time launching it (ties: op name)."""
    rows = session.exec(
        select(KernelGroupStatRecord.key, KernelGroupStatRecord.top_kernel,
               KernelGroupStatRecord.total_ns)
        .where(KernelGroupStatRecord.trace_id == trace_id,
               KernelGroupStatRecord.group_by == "cpu_op_kernel")
    )  # fmt: skip
    best: dict[str, tuple[int, str]] = {}
    for op, name, total in rows:
        if name not in best or (-total, op) < (-best[name][0], best[name][1]):
            best[name] = (total, op)
    return {name: op for name, (_, op) in best.items()}


def compute_compare(
    *, session: Session, a_id: str, b_id: str, tokens_per_step: float | None = None
) -> ComparePublic:
    """Compare two traces; B is the "after" of an optimisation.

    Raises:
        NotFoundError: either trace does not exist.
    """
    a, b = get_trace(session=session, trace_id=a_id), get_trace(session=session, trace_id=b_id)
    rows_a, rows_b = _kernel_rows(session, a_id), _kernel_rows(session, b_id)
    steps_a, steps_b = sv.step_count(a.summary), sv.step_count(b.summary)
    basis = PER_STEP if steps_a and steps_b else SHARE
    time_a, time_b = sv.gpu_time(a.summary), sv.gpu_time(b.summary)
    matches = match_kernels(
        rows_a, rows_b, _launching_ops(session, a_id), _launching_ops(session, b_id)
    )
    if basis == PER_STEP:
        kernels = kernel_deltas(matches, steps_a, steps_b, basis)
        categories = category_deltas(time_a, time_b, steps_a, steps_b, basis)
    else:
        kernels = kernel_deltas(matches, _hundredth(rows_a), _hundredth(rows_b), basis)
        categories = category_deltas(time_a, time_b, _hundredth(time_a), _hundredth(time_b), basis)
    result = ComparePublic(
        a=a_id, b=b_id, a_name=a.name, b_name=b.name, basis=basis,
        basis_note=basis_note(steps_a, steps_b), steps_a=steps_a, steps_b=steps_b,
        headline=headline(basis, kernels, categories),
        metrics=_metrics(a, b, (steps_a, steps_b), tokens_per_step), categories=categories,
        kernels=[k for k in kernels if k.status == "changed"],
        new_kernels=[k for k in kernels if k.status == "new"],
        gone_kernels=[k for k in kernels if k.status == "gone"], markdown="",
    )  # fmt: skip
    result.markdown = render_markdown(result)
    return result
