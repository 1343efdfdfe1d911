"""Plain-language findings, each derived from the trace's numbers by one named rule.

A rule reads the stored summary (and the kernel stats and memory series), decides whether
its condition holds, and says so with the number that triggered it. Rules never know which
file they look at; thresholds are the constants below, and each rule is unit-tested on a
constructed summary on both sides of its threshold.

Public surface: `derive_findings`, `compute_findings`, `RULES`, `Facts`.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlmodel import Session, col, or_, select

from backend.models import KernelStatRecord
from backend.models.analyses import Finding, FindingsPublic, MemorySeries
from backend.services.analysis import summary_view as sv
from backend.services.analysis.compare_report import format_duration
from backend.services.analysis.memory import compute_memory
from backend.services.traces import get_trace

IDLE_PCT = 20.0
PAGEABLE_PCT = 1.0
LOW_OVERLAP_PCT = 30.0
COPY_SHARE_PCT = 10.0
DOMINANT_KERNEL_PCT = 30.0
LOW_FUSION_PCT = 10.0
FUSION_MIN_KERNELS = 100
STEP_SPREAD_PCT = 20.0
FRAGMENTATION_PCT = 30.0
LAUNCH_BOUND_NS = 20_000

# Kernel names only PyTorch's own kernels (ATen) and Inductor's generated ones carry.
PYTORCH_KERNEL_MARKS = ("at::native::", "triton_")


@dataclass(frozen=True, slots=True)
class Facts:
    """What the trace is, beyond its numbers: advice for one framework is given only to
    traces that framework produced (a llama.cpp HIP trace gets no torch.compile tip)."""

    pytorch: bool = False


Rule = Callable[
    [dict[str, Any], list[tuple[str, float]], list[MemorySeries], Facts], Finding | None
]


def _gpu_idle(s: dict[str, Any], _k: Any, _m: Any, _f: Facts) -> Finding | None:
    idle = sv.number(s, "gpu", "time", "idle_pct")
    if idle is None or idle < IDLE_PCT:
        return None
    text = f"GPU idle {idle:.1f}% of its active span"
    gaps = [g for g in s.get("idle_gaps") or [] if isinstance(g, dict)]
    if gaps:
        g = max(gaps, key=lambda g: g.get("dur_ns", 0))
        cause = g.get("cpu_op") or g.get("runtime")
        if cause:
            sync = " (host sync)" if g.get("host_sync") else ""
            text += (f"; the longest gap ({format_duration(g.get('dur_ns', 0))}) "
                     f"follows {cause}{sync}")  # fmt: skip
    return Finding(rule="gpu_idle", severity="warning", text=text, value=idle, unit="%")


def _pageable(s: dict[str, Any], _k: Any, _m: Any, _f: Facts) -> Finding | None:
    pct = sv.number(s, "transfers", "h2d_pageable_pct")
    if pct is None or pct < PAGEABLE_PCT:
        return None
    text = (f"{pct:.0f}% of H2D bytes come from pageable memory; pinned memory "
            "(pin_memory=True) lets copies run asynchronously")  # fmt: skip
    return Finding(rule="pageable_h2d", severity="warning", text=text, value=pct, unit="%")


def _comm_overlap(s: dict[str, Any], _k: Any, _m: Any, _f: Facts) -> Finding | None:
    pct = sv.number(s, "gpu", "time", "comm_compute_overlap_pct")
    if pct is None or pct >= LOW_OVERLAP_PCT:
        return None
    colls = (s.get("communication") or {}).get("collectives") or []
    what = f"NCCL {colls[0]['collective']}" if colls and colls[0].get("collective") else "NCCL"
    text = f"Compute kernels ran during only {pct:.0f}% of {what} time: {pct:.0f}% overlap"
    return Finding(rule="comm_overlap", severity="warning", text=text, value=pct, unit="%")


def _copy_share(s: dict[str, Any], _k: Any, _m: Any, _f: Facts) -> Finding | None:
    span = sv.number(s, "gpu", "time", "span_ns")
    copy = sv.number(s, "gpu", "time", "exclusive", "memcpy_ns")
    if not span or copy is None or 100.0 * copy / span < COPY_SHARE_PCT:
        return None
    share = 100.0 * copy / span
    overlap = sv.number(s, "gpu", "time", "copy_compute_overlap_pct")
    text = f"Memory copies alone take {share:.0f}% of the GPU span"
    if overlap is not None:
        text += f"; {overlap:.0f}% of copy time overlapped compute"
    return Finding(rule="copy_share", severity="warning", text=text, value=share, unit="%")


def _dominant_kernel(
    _s: Any, kernels: list[tuple[str, float]], _m: Any, _f: Facts
) -> Finding | None:
    if not kernels or kernels[0][1] < DOMINANT_KERNEL_PCT:
        return None
    name, pct = kernels[0]
    short = name if len(name) <= 80 else name[:79] + "…"
    text = f"One kernel takes {pct:.0f}% of GPU kernel time: {short}"
    return Finding(rule="dominant_kernel", severity="info", text=text, value=pct, unit="%")


def _fusion(s: dict[str, Any], _k: Any, _m: Any, facts: Facts) -> Finding | None:
    pct = sv.number(s, "fusion", "fused_pct")
    kernels = sv.number(s, "gpu", "kernels") or 0
    if pct is None or pct >= LOW_FUSION_PCT or kernels < FUSION_MIN_KERNELS:
        return None
    text = f"Only {pct:.0f}% of GPU kernel time is in fused kernels"
    if facts.pytorch:
        text += "; torch.compile can fuse elementwise chains"
    return Finding(rule="low_fusion", severity="info", text=text, value=pct, unit="%")


def _step_spread(s: dict[str, Any], _k: Any, _m: Any, _f: Facts) -> Finding | None:
    p50, p95 = sv.number(s, "steps", "cpu", "p50_ns"), sv.number(s, "steps", "cpu", "p95_ns")
    if not p50 or p95 is None:
        return None
    spread = 100.0 * (p95 - p50) / p50
    if spread < STEP_SPREAD_PCT:
        return None
    text = (f"Step time varies: p95 {format_duration(p95)} is {spread:.0f}% above "
            f"p50 {format_duration(p50)}")  # fmt: skip
    return Finding(rule="step_spread", severity="info", text=text, value=spread, unit="%")


def _launch_bound(s: dict[str, Any], _k: Any, _m: Any, _f: Facts) -> Finding | None:
    idle = sv.number(s, "gpu", "time", "idle_pct")
    p50 = sv.number(s, "launch", "delay", "p50_ns")
    if idle is None or p50 is None or idle < IDLE_PCT or p50 > LAUNCH_BOUND_NS:
        return None
    text = (
        f"Kernels start {format_duration(p50)} (p50) after their launch while the GPU is "
        f"idle {idle:.0f}% of the time: the GPU waits for the CPU (launch-bound)"
    )
    return Finding(rule="launch_bound", severity="warning", text=text, value=p50, unit="ns")


def _fragmentation(_s: Any, _k: Any, memory: list[MemorySeries], _f: Facts) -> Finding | None:
    worst = max(
        (m for m in memory if m.fragmentation_at_peak_pct is not None),
        key=lambda m: m.fragmentation_at_peak_pct or 0.0,
        default=None,
    )
    if worst is None or (worst.fragmentation_at_peak_pct or 0.0) < FRAGMENTATION_PCT:
        return None
    pct = worst.fragmentation_at_peak_pct or 0.0
    text = (f"At its peak, {pct:.0f}% of the memory reserved on GPU {worst.device} held no "
            "tensor (fragmentation)")  # fmt: skip
    return Finding(rule="fragmentation", severity="info", text=text, value=pct, unit="%")


RULES: tuple[Rule, ...] = (
    _gpu_idle, _launch_bound, _pageable, _comm_overlap, _copy_share, _dominant_kernel,
    _fusion, _step_spread, _fragmentation,
)  # fmt: skip


def derive_findings(
    summary: dict[str, Any] | None,
    top_kernels: Sequence[tuple[str, float]] = (),
    memory: Sequence[MemorySeries] = (),
    facts: Facts = Facts(),
) -> list[Finding]:
    """Every rule whose condition holds, warnings first.

    Args:
        summary: the stored `ingest.summary.Summary` (a partial one is fine).
        top_kernels: (name, % of kernel time), largest first.
        memory: per-device memory series (for fragmentation).
        facts: what made the trace (framework-specific advice needs it).
    """
    s, k, m = summary or {}, list(top_kernels), list(memory)
    found = [f for rule in RULES if (f := rule(s, k, m, facts))]
    return sorted(found, key=lambda f: f.severity != "warning")


def _made_by_pytorch(session: Session, trace_id: str, fmt: str | None) -> bool:
    """A torch.profiler trace, or any trace (nsys, rocprof...) with ATen/Inductor kernels."""
    if fmt == "torch_profiler":
        return True
    name = col(KernelStatRecord.name)
    marked = or_(*(name.contains(mark) for mark in PYTORCH_KERNEL_MARKS))
    query = select(KernelStatRecord.name).where(KernelStatRecord.trace_id == trace_id, marked)
    return session.exec(query.limit(1)).first() is not None


def compute_findings(*, session: Session, trace_id: str) -> FindingsPublic:
    """Findings of one stored trace.

    Raises:
        NotFoundError: no such trace.
    """
    trace = get_trace(session=session, trace_id=trace_id)
    top = session.exec(
        select(KernelStatRecord.name, KernelStatRecord.pct)
        .where(KernelStatRecord.trace_id == trace_id)
        .order_by(col(KernelStatRecord.rank))
        .limit(1)
    )
    memory = compute_memory(session=session, trace_id=trace_id).devices
    facts = Facts(pytorch=_made_by_pytorch(session, trace_id, trace.format))
    items = derive_findings(trace.summary, [(n, p) for n, p in top], memory, facts)
    return FindingsPublic(trace_id=trace_id, items=items)
