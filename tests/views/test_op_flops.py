"""FLOP and byte estimates from op shapes, against the textbook formulas written out here."""

from __future__ import annotations

import pytest

from backend.services.analysis.gpu_specs import SPECS, lookup_spec
from backend.services.analysis.op_flops import estimate_op

BF16, F32 = "c10::BFloat16", "float"


@pytest.mark.parametrize(
    ("name", "dims", "types", "flops", "elements", "precision"),
    [
        ("aten::mm", [[512, 1024], [1024, 1024]], [BF16, BF16],
         2 * 512 * 1024 * 1024, 512 * 1024 + 1024 * 1024 + 512 * 1024, "bf16"),
        ("aten::addmm", [[256], [64, 128], [128, 256], [], []], [F32] * 3 + ["Scalar"] * 2,
         2 * 64 * 128 * 256, 256 + 64 * 128 + 128 * 256 + 64 * 256, "fp32"),
        ("aten::bmm", [[8, 32, 64], [8, 64, 16]], [F32, F32],
         2 * 8 * 32 * 64 * 16, 8 * 32 * 64 + 8 * 64 * 16 + 8 * 32 * 16, "fp32"),
        ("aten::matmul", [[4, 8, 32, 64], [64, 16]], [F32, F32],
         2 * 4 * 8 * 32 * 64 * 16, 4 * 8 * 32 * 64 + 64 * 16 + 4 * 8 * 32 * 16, "fp32"),
        ("aten::linear", [[16, 10, 512], [2048, 512], [2048]], [BF16] * 3,
         2 * 16 * 10 * 512 * 2048, 16 * 10 * 512 + 2048 * 512 + 2048 + 16 * 10 * 2048, "bf16"),
        ("aten::conv2d", [[2, 3, 32, 32], [16, 3, 3, 3], [16]], [F32] * 3,
         2 * 2 * 16 * 3 * 3 * 3 * 32 * 32,
         2 * 3 * 32 * 32 + 16 * 3 * 3 * 3 + 16 + 2 * 16 * 32 * 32, "fp32"),
        ("aten::_scaled_dot_product_flash_attention",
         [[2, 12, 128, 64], [2, 12, 128, 64], [2, 12, 128, 64], [], []], [BF16] * 3 + [""] * 2,
         2 * 2 * 12 * 128 * 128 * (64 + 64), 4 * 2 * 12 * 128 * 64, "bf16"),
    ],
)  # fmt: skip
def test_standard_formulas(
    name: str,
    dims: list[list[int]],
    types: list[str],
    flops: int,
    elements: int,
    precision: str,
) -> None:
    cost = estimate_op(name, {"Input Dims": dims, "Input type": types})
    assert cost is not None
    size = 2 if types[0] == BF16 else 4
    assert (cost.flops, cost.bytes, cost.precision) == (flops, elements * size, precision)


def test_attention_backward_is_two_and_a_half_forwards() -> None:
    q = [1, 4, 64, 32]
    forward = estimate_op("aten::_scaled_dot_product_flash_attention", {"Input Dims": [q, q, q]})
    backward = estimate_op(
        "aten::_scaled_dot_product_flash_attention_backward", {"Input Dims": [q, q, q, q, q]}
    )
    assert forward is not None and backward is not None
    assert backward.flops == 2.5 * forward.flops


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("aten::add", {"Input Dims": [[4], [4]]}),  # no formula for elementwise ops
        ("aten::mm", None),  # record_shapes was off
        ("aten::mm", {"Input Dims": [[4, 5], [6, 7]]}),  # shapes that cannot multiply
        ("aten::mm", {"Input Dims": [[], []]}),
    ],
)
def test_no_estimate_without_a_formula_or_usable_shapes(
    name: str, args: dict[str, object] | None
) -> None:
    assert estimate_op(name, args) is None


@pytest.mark.parametrize(
    ("device_name", "sms", "key"),
    [
        ("NVIDIA H200", 132, "h200"),
        ("NVIDIA H100 80GB HBM3", 132, "h100_sxm"),
        ("NVIDIA A100-SXM4-80GB", 108, "a100_sxm_80gb"),
        ("NVIDIA L40S", 142, "l40s"),
        ("AMD Instinct MI300X", 304, "mi300x"),
        ("AMD Radeon Graphics", 104, "mi250_gcd"),
        ("AMD Radeon Graphics", 110, "mi250x_gcd"),
    ],
)
def test_spec_lookup(device_name: str, sms: int, key: str) -> None:
    spec = lookup_spec(device_name, sms)
    assert spec is not None and spec.key == key


def test_every_spec_names_its_source_and_has_a_bandwidth() -> None:
    for spec in SPECS:
        assert spec.source.startswith("https://"), spec.key
        assert spec.peak_dram_bytes_per_s > 1e11 and spec.peak_flops["fp32"] > 1e12
