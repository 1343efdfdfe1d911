"""Units and kernel names as the dashboard shows them."""

from __future__ import annotations

import doctest

import pytest

import dashboard.format
from dashboard.format import (
    format_bandwidth,
    format_bytes,
    format_count,
    format_duration_ns,
    format_pct,
    format_timestamp,
    shorten_kernel_name,
)


def test_doctests() -> None:
    result = doctest.testmod(dashboard.format)
    assert result.attempted > 10
    assert result.failed == 0


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (0, "0 ns"),
        (812, "812 ns"),
        (999, "999 ns"),
        (999.7, "1.00 µs"),
        (1_000, "1.00 µs"),
        (12_345, "12.3 µs"),
        (99_960, "100 µs"),
        (123_456, "123 µs"),
        (4_561_000, "4.56 ms"),
        (999_999, "1.00 ms"),
        (1_234_000_000, "1.23 s"),
        (125_000_000_000, "125 s"),
        (None, "—"),
    ],
)
def test_format_duration_ns(ns: float | None, text: str) -> None:
    assert format_duration_ns(ns) == text


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0 B"),
        (999, "999 B"),
        (15_000, "15.0 KB"),
        (15_341, "15.3 KB"),
        (999_999, "1.0 MB"),
        (1_234_567_890, "1.2 GB"),
        (2 * 10**12, "2.0 TB"),
        (None, "—"),
    ],
)
def test_format_bytes(n: int | None, text: str) -> None:
    assert format_bytes(n) == text


@pytest.mark.parametrize(
    ("rate", "text"),
    [(4.8e12, "4.8 TB/s"), (25.3e9, "25.3 GB/s"), (900e6, "900.0 MB/s"), (10, "10 B/s")],
)
def test_format_bandwidth(rate: float, text: str) -> None:
    assert format_bandwidth(rate) == text


def test_small_formatters() -> None:
    assert format_count(1_234_567) == "1,234,567"
    assert format_pct(2.349) == "2.3%"
    assert format_timestamp("2026-11-29T15:38:18.049234") == "2026-11-29 15:38:18 UTC"
    assert format_timestamp(None) == "—"


FILL = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
    "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)"
)
COPY = (
    "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda("
    "at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda(float)#1}, "
    "std::array<char*, 2ul>, 4, TrivialOffsetCalculator<1, unsigned int> >(int, "
    "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda(float)#1})"
)
LAYER_NORM = (
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float, "
    "false>(int, float, float const*, float const*, float const*, float*, float*, float*)"
)
CUTLASS = (
    "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>"
    "(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8::Params)"
)
SPLIT_K = (
    "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_"
    "aligna4_alignc4_execute_split_k_kernel__5x_cublas"
)


@pytest.mark.parametrize(
    ("name", "short"),
    [
        ("ampere_sgemm_128x64_tn", "ampere_sgemm_128x64_tn"),
        ("void kernel(int, float*)", "kernel"),
        (FILL, "vectorized_elementwise_kernel<FillFunctor, …>"),
        (COPY, "unrolled_elementwise_kernel<direct_copy_kernel_cuda, …>"),
        (LAYER_NORM, "vectorized_layer_norm_kernel<…>"),
        (CUTLASS, "Kernel2<cutlass_80_wmma_tensorop_bf…6_32x32_128x2_tn_align8>"),
        (SPLIT_K, "sm80_xmma_gemm_f32f32_f32f32_f32_nn…plit_k_kernel__5x_cublas"),
        ("void broken<int(", "broken<int("),
    ],
)
def test_shorten_kernel_name(name: str, short: str) -> None:
    assert shorten_kernel_name(name) == short


@pytest.mark.parametrize("max_len", [10, 30, 60])
def test_shorten_kernel_name_respects_max_len(max_len: int) -> None:
    for name in (FILL, COPY, CUTLASS, SPLIT_K):
        assert len(shorten_kernel_name(name, max_len)) <= max_len


def test_peak_memory_tile_has_no_exponent() -> None:
    """A peak-memory SLA (bytes, from the H200 bench: 4,093,423,616 B) reads as a number,
    not `4.093e+09`, and as bytes wherever the unit is known."""
    from dashboard.components.sla_tile import sla_tile
    from dashboard.format import format_value

    peak = 4_093_423_616.0
    tile = sla_tile({
        "id": "x", "name": "peak memory", "project": "p", "benchmark": "b",
        "metric": "train_peak_mem_bytes", "statistic": "p50", "rule": "absolute", "op": "<=",
        "branch": "", "severity": "warning", "status": "pass", "last_observed": peak,
        "last_threshold": 5e9, "sparkline": [peak], "status_changed_at": None,
    })  # fmt: skip
    assert "e+" not in tile
    assert "4,093,423,616" in tile and "5,000,000,000" in tile
    assert format_value(peak, "B") == format_bytes(peak) == "4.1 GB"


def test_an_sla_without_a_tolerance_yet_shows_what_it_lacks() -> None:
    """Issue #37: `insufficient_data` is a state of its own on the board, with the missing
    data (the evaluation's message, escaped) under the value."""
    from dashboard.components.sla_tile import sla_tile

    missing = "no tolerance_pct and no noise band yet: 2 of 5 A/A runs usable; need <4>"
    tile = sla_tile({
        "id": "x", "name": "gemm", "project": "p", "benchmark": "b", "metric": "tflops",
        "statistic": "p50", "rule": "relative", "op": "<=", "branch": "",
        "severity": "warning", "status": "insufficient_data", "last_observed": 596.5,
        "last_threshold": None, "sparkline": [596.5], "status_changed_at": None,
        "last_skip_reason": missing,
    })  # fmt: skip
    assert 'class="sla-tile sla-insufficient"' in tile and "INSUFFICIENT DATA" in tile
    assert "2 of 5 A/A runs usable; need &lt;4&gt;" in tile and "skipped" not in tile
