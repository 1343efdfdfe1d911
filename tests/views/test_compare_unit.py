"""Kernel matching across tools and the Markdown report, on constructed inputs."""

from __future__ import annotations

import pytest

from backend.models.analyses import ComparePublic, KernelDelta, MetricDelta
from backend.services.analysis.compare import basis_note, kernel_deltas
from backend.services.analysis.compare_kernels import KernelRow, match_kernels
from backend.services.analysis.compare_report import render_markdown
from backend.services.analysis.kernel_names import base_key, exact_key

TORCH_FILL = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
    "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)"
)
TORCH_ADD = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)"
)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("void k<4>(int)", "k<4>(int)"),  # nsys demangled vs torch
        ("void  ns::k<4>( int )", "void ns::k<4>( int )"),  # whitespace
        ("gemm_kernel [clone .kd]", "gemm_kernel"),  # rocprof v1
        ("gemm_kernel.kd", "gemm_kernel"),  # rocprofv3
    ],
)
def test_exact_key_ignores_tool_decoration(a: str, b: str) -> None:
    assert exact_key(a) == exact_key(b)


def test_base_key_is_the_short_name() -> None:
    assert base_key(TORCH_FILL) == "vectorized_elementwise_kernel"
    assert base_key("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm>(Params)") == "Kernel2"


def _deltas(
    a: list[KernelRow],
    b: list[KernelRow],
    ops_a: dict[str, str] | None = None,
    ops_b: dict[str, str] | None = None,
) -> tuple[list[KernelDelta], list[KernelDelta], list[KernelDelta]]:
    """(matched, new, gone) rows; one step each side, so values are the totals."""
    rows = kernel_deltas(match_kernels(a, b, ops_a, ops_b), 1, 1, "per_step")
    by = {s: [d for d in rows if d.status == s] for s in ("changed", "new", "gone")}
    return by["changed"], by["new"], by["gone"]


def test_matching_full_names_with_short_names_sums_the_instantiations() -> None:
    torch_rows = [(TORCH_FILL, 3, 3_000), (TORCH_ADD, 12, 24_000), ("nvjet_a", 6, 60_000)]
    nsys_rows = [("vectorized_elementwise_kernel", 15, 20_000), ("nvjet_b", 6, 50_000)]
    matched, new, gone = _deltas(torch_rows, nsys_rows)
    assert [(d.key, d.count_a, d.total_ns_a, d.count_b, d.total_ns_b) for d in matched] == [
        ("vectorized_elementwise_kernel", 15, 27_000, 15, 20_000)
    ]
    assert matched[0].delta == -7_000 and matched[0].names_a == [TORCH_FILL, TORCH_ADD]
    assert matched[0].delta_pct == pytest.approx(100 * -7_000 / 27_000, abs=1e-3)
    assert [(d.name, d.status, d.delta) for d in new] == [("nvjet_b", "new", 50_000)]
    assert [(d.name, d.status, d.delta) for d in gone] == [("nvjet_a", "gone", -60_000)]


def test_exact_matches_win_and_results_sort_by_absolute_impact() -> None:
    a = [("k1", 1, 100), ("k2", 1, 1_000), ("k3", 1, 500)]
    b = [("k1", 1, 900), ("k2", 1, 100), ("k3", 1, 500)]
    matched, new, gone = _deltas(a, b)
    assert [(d.key, d.delta) for d in matched] == [("k2", -900), ("k1", 800), ("k3", 0)]
    assert {d.match for d in matched} == {"exact"} and new == gone == []


def test_renamed_kernels_match_by_launching_op_after_names_fail() -> None:
    a = [("relu_kernel", 4, 400), ("dropout_kernel", 4, 300), ("orphan_a", 1, 10)]
    b = [("fused_relu_dropout", 4, 200), ("orphan_b", 1, 20)]
    ops_a = {"relu_kernel": "aten::relu", "dropout_kernel": "aten::relu"}
    ops_b = {"fused_relu_dropout": "aten::relu"}
    matched, new, gone = _deltas(a, b, ops_a, ops_b)
    assert [(d.key, d.match, d.op, d.names_a, d.names_b, d.delta) for d in matched] == [
        ("aten::relu", "op", "aten::relu", ["relu_kernel", "dropout_kernel"],
         ["fused_relu_dropout"], -500)
    ]  # fmt: skip
    assert [(d.name, d.match) for d in new] == [("orphan_b", "none")]
    assert [(d.name, d.match) for d in gone] == [("orphan_a", "none")]


def test_unmatched_kernels_are_listed_one_by_one_not_by_their_shared_base_name() -> None:
    mean = "void at::native::reduce_kernel<128, 4, ReduceOp<float, MeanOps> >(ReduceOp)"
    top = "void at::native::reduce_kernel<512, 1, ReduceOp<float, MaxOps> >(ReduceOp)"
    matched, new, gone = _deltas([(mean, 2, 120), (top, 2, 80)], [("other", 1, 5)])
    assert matched == [] and [d.name for d in new] == ["other"]
    assert [(d.name, d.names_a, d.total_ns_a) for d in gone] == [
        (mean, [mean], 120),
        (top, [top], 80),
    ]


def _m(metric: str, label: str, unit: str, a: float | None, b: float | None) -> MetricDelta:
    delta = None if a is None or b is None else b - a
    pct = None if delta is None or not a else 100 * delta / a
    return MetricDelta(metric=metric, label=label, unit=unit, a=a, b=b, delta=delta, delta_pct=pct)


def _result(
    metrics: list[MetricDelta],
    matched: list[KernelDelta],
    new: list[KernelDelta],
    gone: list[KernelDelta],
) -> ComparePublic:
    return ComparePublic(a="a", b="b", a_name="before.json", b_name="after.json",
                         basis="per_step", basis_note=basis_note(1, 1), steps_a=1, steps_b=1,
                         headline=[], metrics=metrics, categories=[], kernels=matched,
                         new_kernels=new, gone_kernels=gone, markdown="")  # fmt: skip


def test_markdown_uses_the_report_wording() -> None:
    metrics = [
        _m("step_time_ns", "Step time", "ns", 12_300_000, 10_100_000),
        _m("throughput_tokens_per_s", "Throughput", "tokens/s", 41_626.0, 50_693.0),
        _m("peak_memory_bytes", "Peak memory", "bytes", 40e9, 32e9),
        _m("gpu_idle_pct", "GPU idle", "%", 38.0, 12.5),
        _m("comm_compute_overlap_pct", "Comm/compute overlap", "%", None, None),
    ]
    matched, new, gone = _deltas(
        [("<script>alert(1)</script>", 2, 4_000), ("a|b", 1, 10)],
        [("<script>alert(1)</script>", 2, 1_000)],
    )
    text = render_markdown(_result(metrics, matched, new, gone))
    lines = text.splitlines()
    assert "- Step time: 12.3 ms → 10.1 ms (17.9% improvement)" in lines
    assert "- Throughput: 41,626 → 50,693 tokens/s (21.8% increase)" in lines
    assert "- Peak memory: 40.00 GB → 32.00 GB (20.0% reduction)" in lines
    assert "- GPU idle: 38.0% → 12.5% (-25.5 points)" in lines
    assert "- Not recorded in both traces: Comm/compute overlap" in lines
    assert (
        "| `<script>alert(1)</script>` | same name | 4.00 µs | 1.00 µs | -3.00 µs | -75.0% |"
        in lines
    )
    # only a table cell escapes `|`
    assert "- `a|b`: 1 launches, 10 ns in the trace (10 ns per step)" in lines


def test_markdown_says_regression_when_it_got_slower() -> None:
    metrics = [_m("step_time_ns", "Step time", "ns", 10e6, 11e6)]
    text = render_markdown(_result(metrics, [], [], []))
    assert "- Step time: 10.0 ms → 11.0 ms (10.0% regression)" in text.splitlines()
