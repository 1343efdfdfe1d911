"""The A-vs-B report as the Markdown a performance engineer writes after an optimisation.

Lines follow the issue's wording: "Step time: X ms → Y ms (Z% improvement)", "Throughput:
A → B tokens/s (C% increase)", "Peak memory: D GB → E GB (F% reduction)"; a change in the
unwanted direction says "regression" or "increase". Trace and kernel names are code spans
(`backend.core.markdown_escape.code_span`), so a name holding `<script>`, `|`, a
backtick or a newline stays text in any Markdown renderer and cannot start a line.

It opens with the biggest changes (the comparison's `headline`) and states the basis every
kernel and category number is in: time per step, or shares when a trace has no steps.

Public surface: `render_markdown`, `format_duration`.
"""

from collections.abc import Sequence

from backend.core.markdown_escape import code_span
from backend.models.analyses import ComparePublic, HeadlineItem, KernelDelta, MetricDelta

TOP_KERNELS = 10
NAME_WIDTH = 80
_DURATION_UNITS = (("s", 1e9), ("ms", 1e6), ("µs", 1e3))


def format_duration(ns: float) -> str:
    """A duration in the largest unit that keeps it at or above 1, three digits.

    >>> format_duration(12_300_000), format_duration(812), format_duration(-4_500)
    ('12.3 ms', '812 ns', '-4.50 µs')
    """
    for unit, scale in _DURATION_UNITS:
        if abs(ns) >= scale * 0.9995:
            v = ns / scale
            return f"{v:.{2 if abs(v) < 9.995 else 1 if abs(v) < 99.95 else 0}f} {unit}"
    return f"{ns:.0f} ns"


def _value(m: MetricDelta, v: float) -> str:
    if m.unit == "ns":
        return format_duration(v)
    if m.unit == "bytes":
        return f"{v / 1e9:.2f} GB"
    if m.unit == "tokens/s":
        return f"{v:,.0f}"
    return f"{v:.1f}%"


def _direction(m: MetricDelta) -> str:
    """Words for the change: lower is better for times and memory, higher for the rest."""
    assert m.delta is not None
    lower_better = m.unit in ("ns", "bytes") or m.metric == "gpu_idle_pct"
    better = (m.delta < 0) == lower_better
    if m.unit == "ns":
        return "improvement" if better else "regression"
    if m.unit == "bytes":
        return "reduction" if m.delta < 0 else "increase"
    return "increase" if m.delta > 0 else "decrease"


def _metric_line(m: MetricDelta) -> str | None:
    if m.a is None or m.b is None or m.delta is None:
        return None
    unit = " tokens/s" if m.unit == "tokens/s" else ""
    head = f"- {m.label}: {_value(m, m.a)} → {_value(m, m.b)}{unit}"
    if m.unit == "%":
        return f"{head} ({m.delta:+.1f} points)"
    if m.delta_pct is None or m.delta == 0:
        return f"{head} (no change)"
    return f"{head} ({abs(m.delta_pct):.1f}% {_direction(m)})"


def _code(name: str, *, in_table: bool = False) -> str:
    return code_span(name, max_chars=NAME_WIDTH, in_table=in_table)


def _basis_value(share: bool, v: float) -> str:
    return f"{v:.2f}%" if share else format_duration(v)


def _basis_delta(share: bool, v: float) -> str:
    if share:
        return f"{v:+.2f} points"
    return ("+" if v > 0 else "") + format_duration(v)


def _headline_line(rank: int, h: HeadlineItem) -> str:
    share = h.unit != "ns/step"
    what = h.label
    if h.kind == "kernel":
        what = ("kernels launched by " if h.match == "op" else "kernel ") + _code(h.label)
        what += {"new": " (new in B)", "gone": " (gone from B)"}.get(h.status or "", "")
    per = f" of {h.unit.removeprefix('% of ')}" if share else " per step"
    pct = "" if h.delta_pct is None else f", {h.delta_pct:+.1f}%"
    return (
        f"{rank}. {what}: {_basis_value(share, h.a)} → {_basis_value(share, h.b)}{per} "
        f"({_basis_delta(share, h.delta)}{pct})"
    )


_MATCH = {"exact": "same name", "name": "name without template arguments", "op": "launching op"}


def _kernel_table(rows: Sequence[KernelDelta], share: bool) -> list[str]:
    col = "share of kernel time" if share else "per step"
    lines = [
        f"| Kernel | Matched by | A {col} | B {col} | Δ | Δ % |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for d in rows[:TOP_KERNELS]:
        pct = "—" if d.delta_pct is None else f"{d.delta_pct:+.1f}%"
        lines.append(
            f"| {_code(d.name, in_table=True)} | {_MATCH.get(d.match, d.match)}"
            f" | {_basis_value(share, d.a)} | {_basis_value(share, d.b)}"
            f" | {_basis_delta(share, d.delta)} | {pct} |"
        )
    return lines


def _kernel_list(title: str, rows: Sequence[KernelDelta], steps: int) -> list[str]:
    """New or gone kernels, one line each; `steps` of the trace they are in, 0 for shares."""
    if not rows:
        return []
    items = [
        f"- {_code(d.name)}: {d.count_a or d.count_b:,} launches, "
        f"{format_duration(d.total_ns_a or d.total_ns_b)} in the trace"
        + (f" ({_basis_value(False, d.a or d.b)} per step)" if steps else
           f" ({_basis_value(True, d.a or d.b)} of kernel time)")
        for d in rows[:TOP_KERNELS]
    ]  # fmt: skip
    more = [f"- … and {len(rows) - TOP_KERNELS} more"] if len(rows) > TOP_KERNELS else []
    return ["", f"### {title}", "", *items, *more]


def render_markdown(result: ComparePublic) -> str:
    """The whole report; metrics that neither trace recorded are left out, not zeroed."""
    share = result.basis == "share"
    lines = [f"## Trace comparison: {_code(result.a_name)} → {_code(result.b_name)}", ""]
    lines += [result.basis_note, ""]
    if result.headline:
        lines += ["### Biggest changes", ""]
        lines += [_headline_line(i, h) for i, h in enumerate(result.headline, 1)]
        lines += ["", "### Metrics", ""]
    metrics = result.metrics
    lines += [line for m in metrics if (line := _metric_line(m))]
    unknown = [m.label for m in metrics if m.a is None or m.b is None]
    if unknown:
        lines.append(f"- Not recorded in both traces: {', '.join(unknown)}")
    if result.kernels:
        lines += ["", "### Top kernel deltas", "", *_kernel_table(result.kernels, share)]
    per_step = not share
    lines += _kernel_list("New kernels (only in B)", result.new_kernels, per_step * result.steps_b)
    lines += _kernel_list(
        "Gone kernels (only in A)", result.gone_kernels, per_step * result.steps_a
    )
    return "\n".join(lines) + "\n"
